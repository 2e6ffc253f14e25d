package loadbalancer

import (
	"fmt"
	"net/netip"
)

// pool hands out the addresses of a prefix, one per Service, except its first and last address.
type pool struct {
	prefix      netip.Prefix
	first, last netip.Addr // usable bounds
	owners      map[netip.Addr]string
}

func newPool(prefix netip.Prefix) *pool {
	return &pool{
		prefix: prefix,
		first:  prefix.Addr().Next(),
		last:   lastAddr(prefix).Prev(),
		owners: map[netip.Addr]string{},
	}
}

// lastAddr is the prefix's highest address: every host bit set.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func (p *pool) usable(a netip.Addr) bool {
	return p.prefix.Contains(a) && a.Compare(p.first) >= 0 && a.Compare(p.last) <= 0
}

// assign gives addr to owner; it fails when addr is outside the usable range or someone else has it.
func (p *pool) assign(owner string, addr netip.Addr) error {
	addr = addr.Unmap()
	if !p.usable(addr) {
		return fmt.Errorf("address %s is not in the load balancer range %s (excluding its first and last address)", addr, p.prefix)
	}
	if o, taken := p.owners[addr]; taken && o != owner {
		return fmt.Errorf("address %s is already used by Service %s", addr, o)
	}
	p.owners[addr] = owner
	return nil
}

// next gives owner the lowest free address.
func (p *pool) next(owner string) (netip.Addr, error) {
	for a := p.first; a.IsValid() && a.Compare(p.last) <= 0; a = a.Next() {
		if _, taken := p.owners[a]; !taken {
			p.owners[a] = owner
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("every address of the load balancer range %s is in use", p.prefix)
}

func (p *pool) release(addr netip.Addr) {
	delete(p.owners, addr)
}
