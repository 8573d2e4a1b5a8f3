import { expect } from 'chai';
import { publicAddressesOnly } from '../../src/net/address-policy.js';
import { sanitizeFilename } from '../../src/requests/attachments/fetch.js';
import { formatBytes } from '../../src/requests/attachments/download.js';

describe('publicAddressesOnly()', () => {
  const refused = [
    '127.0.0.1',
    '127.9.9.9',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.0.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.1',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    'ff02::1',
    'not-an-ip',
  ];
  // IPv6 forms that carry a non-public IPv4 address: compatible, mapped, translated, NAT64, 6to4, Teredo.
  const embedded = [
    '::127.0.0.1',
    '::7f00:1',
    '::10.0.0.1',
    '::169.254.169.254',
    '::ffff:0:127.0.0.1',
    '::ffff:0:a9fe:a9fe',
    '64:ff9b::127.0.0.1',
    '64:ff9b::a00:1',
    '64:ff9b::192.168.1.1',
    '64:ff9b:1::8.8.8.8',
    '2002:7f00:1::',
    '2002:a9fe:a9fe::1',
    '2002:c0a8:101::1',
    '2001:0:7f00:1::808:808',
    '2001:0:808:808::80ff:fefe',
    '2001:0:4136:e378:8000:63bf:f5ff:fffe',
  ];
  // Reserved, documentation, benchmarking and other non-unicast IPv6 ranges.
  const reserved6 = ['2001:db8::1', '2001:2::1', '100::1', '::2', 'ff0e::1', 'fec0::1'];
  for (const address of [...embedded, ...reserved6]) it(`refuses ${address}`, () => expect(publicAddressesOnly(address)).to.equal(false));
  const allowed = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2002:808:808::1', '2001:0:808:808::f7f7:f7f7'];
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
    // Bidi overrides and isolates, zero-width and other invisible characters are removed.
    ['invoice\u202Efdp.exe', 'invoicefdp.exe'],
    ['a\u202Ab\u202Bc\u202Cd\u202De\u2066f\u2067g\u2068h\u2069i\u200Ej\u200Fk\u061Cl.txt', 'abcdefghijkl.txt'],
    ['re\u200Bport\u200C\u200D\u2060\uFEFF\u00AD.pdf', 'report.pdf'],
    ['hangul\u3164filler\u034F.txt', 'hangulfiller.txt'],
    ['line\u2028para\u2029.txt', 'linepara.txt'],
    ['c1\u0085\u009b.txt', 'c1_.txt'],
    ['\u202E', 'attachment'],
    ['zürich 🙂.txt', 'zürich 🙂.txt'],
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
