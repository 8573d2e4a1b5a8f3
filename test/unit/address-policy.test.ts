import { expect } from 'chai';
import { publicAddressesOnly } from '../../src/requests/attachments/address-policy.js';
import { sanitizeFilename } from '../../src/requests/attachments/fetch.js';
import { formatBytes } from '../../src/requests/attachments/download.js';

describe('publicAddressesOnly()', () => {
  const refused = [
    '127.0.0.1', '127.9.9.9', '10.1.2.3', '172.16.0.1', '192.168.0.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
    '255.255.255.255', '224.0.0.1', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1',
    'ff02::1', 'not-an-ip',
  ];
  const allowed = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8'];
  for (const address of refused) it(`refuses ${address}`, () => expect(publicAddressesOnly(address)).to.equal(false));
  for (const address of allowed) it(`allows ${address}`, () => expect(publicAddressesOnly(address)).to.equal(true));
});

describe('sanitizeFilename()', () => {
  const cases: Array<[string, string]> = [
    ['report.pdf', 'report.pdf'],
    ['../../etc/passwd', '_.._etc_passwd'],
    ['.hidden', 'hidden'],
    ['a\u0000b\nc.txt', 'a_b_c.txt'],
    ['C:\\Windows\\x.dll', 'C_Windows_x.dll'],
    ['', 'attachment'],
    ['...', 'attachment'],
    ['///', 'attachment'],
  ];
  for (const [input, output] of cases) it(`turns ${JSON.stringify(input)} into ${JSON.stringify(output)}`, () => expect(sanitizeFilename(input)).to.equal(output));
  it('keeps names to 255 characters', () => expect(sanitizeFilename('a'.repeat(400))).to.have.length(255));
});

describe('formatBytes()', () => {
  it('names whole units', () => {
    expect(formatBytes(25 * 1024 * 1024)).to.equal('25 MiB');
    expect(formatBytes(1024)).to.equal('1 KiB');
    expect(formatBytes(1500)).to.equal('1500 bytes');
  });
});
