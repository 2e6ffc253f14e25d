package tcprelay

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

func TestReadyEndpoints(t *testing.T) {
	port := func(name string, p int32, proto corev1.Protocol) discoveryv1.EndpointPort {
		return discoveryv1.EndpointPort{Name: ptr.To(name), Port: ptr.To(p), Protocol: ptr.To(proto)}
	}
	endpoint := func(ready *bool, addrs ...string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: addrs, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	}
	slices := []*discoveryv1.EndpointSlice{
		{
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{port("http", 8080, corev1.ProtocolTCP), port("dns", 53, corev1.ProtocolUDP)},
			Endpoints: []discoveryv1.Endpoint{
				endpoint(ptr.To(true), "10.1.0.2", "10.1.0.99"),
				endpoint(nil, "10.1.0.3"),
				endpoint(ptr.To(false), "10.1.0.4"),
			},
		},
		{
			AddressType: discoveryv1.AddressTypeIPv6,
			Ports:       []discoveryv1.EndpointPort{port("http", 8080, corev1.ProtocolTCP)},
			Endpoints:   []discoveryv1.Endpoint{endpoint(nil, "fd00::2")},
		},
		{ // the same endpoint again, as while a slice is being split
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{port("http", 8080, corev1.ProtocolTCP)},
			Endpoints:   []discoveryv1.Endpoint{endpoint(nil, "10.1.0.3")},
		},
		{
			AddressType: discoveryv1.AddressTypeFQDN,
			Ports:       []discoveryv1.EndpointPort{port("http", 8080, corev1.ProtocolTCP)},
			Endpoints:   []discoveryv1.Endpoint{endpoint(nil, "example.com")},
		},
	}
	got := ReadyEndpoints(slices)
	want := []string{"10.1.0.2:8080", "10.1.0.3:8080", "[fd00::2]:8080"}
	if len(got) != 1 || strings.Join(got["http"], ",") != strings.Join(want, ",") {
		t.Fatalf("ReadyEndpoints() = %v; want http: %v", got, want)
	}
}
