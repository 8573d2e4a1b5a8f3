import { expect } from 'chai';
import { createSecretBox, isSealed, messages } from '../../src/secrets/secret-box.js';

describe('createSecretBox()', () => {
  const box = createSecretBox(Buffer.alloc(32, 1));
  const other = createSecretBox(Buffer.alloc(32, 2));

  it('seals text so that only the same key opens it, with a fresh nonce each time', () => {
    const sealed = box.seal('whsec_c2VjcmV0 ünïcode ✓');
    expect(sealed).to.match(new RegExp(`^sealed:v1:${box.keyId}:[A-Za-z0-9_-]+$`));
    expect(box.open(sealed)).to.equal('whsec_c2VjcmV0 ünïcode ✓');
    expect(box.seal('same')).not.to.equal(box.seal('same'));
    expect(box.open(box.seal(''))).to.equal('');
  });

  it('says which keys differ when a value was sealed with another key', () => {
    expect(() => other.open(box.seal('x'))).to.throw(messages.otherKey(box.keyId, other.keyId));
  });

  it('refuses a sealed value that was changed or cut, rather than return something else', () => {
    const sealed = box.seal('the real secret');
    // A character well inside the payload: the last one may carry only padding bits.
    const at = sealed.length - 12;
    const changed = `${sealed.slice(0, at)}${sealed[at] === 'A' ? 'B' : 'A'}${sealed.slice(at + 1)}`;
    expect(() => box.open(changed)).to.throw(messages.damaged);
    expect(() => box.open(sealed.slice(0, sealed.indexOf(':', 10) + 8))).to.throw(messages.damaged);
  });

  it('returns a value stored in clear (before sealing existed) as it is', () => {
    expect(isSealed('sk-plain')).to.equal(false);
    expect(box.open('sk-plain')).to.equal('sk-plain');
  });

  it('takes only a 32-byte key', () => {
    expect(() => createSecretBox(Buffer.alloc(16))).to.throw('a secret box needs a 32-byte key');
  });
});
