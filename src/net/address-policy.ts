import ipaddr from 'ipaddr.js';

/** Decides whether the downloader may connect to an IP address. */
export type AddressPolicy = (address: string) => boolean;

/**
 * Only globally routable unicast addresses: no loopback, private, link-local (cloud
 * metadata), carrier-grade NAT, multicast, reserved or unspecified ones. An IPv6 address
 * that carries an IPv4 address (see `embeddedIPv4`) is judged by the IPv4 addresses it
 * reaches, so `::127.0.0.1` or `64:ff9b::a00:1` is no way around the IPv4 rules.
 */
export const publicAddressesOnly: AddressPolicy = (address) => {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  const embedded = embeddedIPv4(v6);
  if (embedded) return embedded.length > 0 && embedded.every((v4) => v4.range() === 'unicast');
  return v6.range() === 'unicast';
};

export const anyAddress: AddressPolicy = () => true;

/**
 * The IPv4 addresses an IPv6 address leads to, for the forms that carry them: IPv4-compatible
 * (::/96, deprecated) and IPv4-mapped (::ffff:0:0/96) and -translated (::ffff:0:0:0/96);
 * NAT64's well-known prefix (64:ff9b::/96); 6to4 (2002::/16, the relay's IPv4 in bits
 * 16–47); Teredo (2001::/32, the server's IPv4 and the client's, inverted, in the last 32
 * bits). None (an empty list, refused) for NAT64's local-use prefix 64:ff9b:1::/48, whose
 * translator is the network's own. Undefined for any other address.
 */
function embeddedIPv4(v6: ipaddr.IPv6): ipaddr.IPv4[] | undefined {
  const p = v6.parts;
  const v4 = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  const zeros = (from: number, to: number) => p.slice(from, to).every((part) => part === 0);
  if (zeros(0, 5) && (p[5] === 0 || p[5] === 0xffff)) return [v4(p[6]!, p[7]!)];
  if (zeros(0, 4) && p[4] === 0xffff && p[5] === 0) return [v4(p[6]!, p[7]!)];
  if (p[0] === 0x64 && p[1] === 0xff9b && zeros(2, 6)) return [v4(p[6]!, p[7]!)];
  if (p[0] === 0x64 && p[1] === 0xff9b && p[2] === 1) return [];
  if (p[0] === 0x2002) return [v4(p[1]!, p[2]!)];
  if (p[0] === 0x2001 && p[1] === 0) return [v4(p[2]!, p[3]!), v4(p[6]! ^ 0xffff, p[7]! ^ 0xffff)];
  return undefined;
}
