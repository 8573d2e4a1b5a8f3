import path from 'node:path';
import { createRequire } from 'node:module';
import express, { Router } from 'express';
import { PUBLIC_DIR } from '../lib/paths.js';
import { openApiDocument } from './openapi.js';

// Swagger UI's own files, served from the installed package: nothing comes from a CDN.
const SWAGGER_UI_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** `/api/v1/openapi.json` (the document, no key needed) and `/docs`, a browsable reference. */
export function apiDocsRoutes(): { document: Router; browser: Router } {
  // Built on first request, not with every app (tests build many), then kept.
  let text: string | undefined;
  const document = Router();
  document.get('/openapi.json', (_req, res) => {
    text ??= JSON.stringify(openApiDocument());
    res.type('json').send(text);
  });

  const browser = Router();
  browser.use('/docs/assets', express.static(SWAGGER_UI_DIR, { index: false, maxAge: '1h', fallthrough: false }));
  browser.get('/docs', (_req, res) => {
    res.sendFile(path.join(PUBLIC_DIR, 'docs.html'));
  });
  return { document, browser };
}
