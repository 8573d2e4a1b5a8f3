import ipaddr from 'ipaddr.js';

/** Decides whether the downloader may connect to an IP address. */
export type AddressPolicy = (address: string) => boolean;

/**
 * Only globally routable unicast addresses: no loopback, private, link-local (cloud
 * metadata), carrier-grade NAT, multicast, reserved or unspecified ones. IPv4 addresses
 * written as IPv6 (::ffff:127.0.0.1) are judged as the IPv4 address they are.
 */
export const publicAddressesOnly: AddressPolicy = (address) => {
  if (!ipaddr.isValid(address)) return false;
  let parsed = ipaddr.parse(address);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) parsed = v6.toIPv4Address();
  }
  return parsed.range() === 'unicast';
};

export const anyAddress: AddressPolicy = () => true;
