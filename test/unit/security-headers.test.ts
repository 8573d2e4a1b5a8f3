import { expect } from 'chai';
import express from 'express';
import supertest from 'supertest';
import { securityHeaders } from '../../src/http/security-headers.js';

describe('securityHeaders()', () => {
  const app = express();
  app.set('trust proxy', 'loopback');
  app.use(securityHeaders());
  app.get('/', (_req, res) => res.send('ok'));

  const csp = async (proto?: string) => {
    const req = supertest(app).get('/');
    const res = await (proto ? req.set('X-Forwarded-Proto', proto) : req);
    return String(res.headers['content-security-policy']);
  };

  it('does not ask a browser on plain HTTP to upgrade to an HTTPS port that is not there', async () => {
    const policy = await csp();
    expect(policy).to.include("default-src 'self'").and.include("form-action 'self'");
    expect(policy).to.not.include('upgrade-insecure-requests');
  });

  it('asks for upgrades when the request came over HTTPS through a trusted proxy', async () => {
    expect(await csp('https')).to.include('upgrade-insecure-requests');
    expect(await csp('http')).to.not.include('upgrade-insecure-requests');
  });
});
