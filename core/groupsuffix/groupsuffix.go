// Package groupsuffix renames the Pinniped API groups for installations that use an API group
// suffix other than the default "pinniped.dev" (for example "login.concierge.tuna.io" instead of
// "login.concierge.pinniped.dev"). Our Go types and generated clients always speak the default
// groups; this package maps them to and from the configured suffix on the wire (Transport) and in
// install manifests (RewriteManifest).
package groupsuffix

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Default is the API group suffix our types are written against.
const Default = "pinniped.dev"

// groupPrefixes lists the first labels of every API group we own; each is followed by the suffix.
var groupPrefixes = []string{
	"authentication.concierge",
	"config.concierge",
	"login.concierge",
	"identity.concierge",
	"config.supervisor",
	"idp.supervisor",
	"clientsecret.supervisor",
}

// Validate reports whether suffix can be used as an API group suffix: a DNS-1123 subdomain with at
// least two labels.
func Validate(suffix string) error {
	if errs := validation.IsDNS1123Subdomain(suffix); len(errs) > 0 {
		return fmt.Errorf("invalid API group suffix %q: %s", suffix, strings.Join(errs, "; "))
	}
	if !strings.Contains(suffix, ".") {
		return fmt.Errorf("invalid API group suffix %q: must contain at least one '.'", suffix)
	}
	return nil
}

// Groups returns our API groups under suffix, in a fixed order.
func Groups(suffix string) []string {
	groups := make([]string, 0, len(groupPrefixes))
	for _, prefix := range groupPrefixes {
		groups = append(groups, prefix+"."+suffix)
	}
	return groups
}

// Replace maps one of our default groups (such as "login.concierge.pinniped.dev") to the same group
// under suffix. It returns false, and group unchanged, for any other group.
func Replace(group, suffix string) (string, bool) {
	return swapSuffix(group, Default, suffix)
}

// Unreplace is the inverse of Replace: it maps one of our groups under suffix back to the default
// group. It returns false, and group unchanged, for any other group.
func Unreplace(group, suffix string) (string, bool) {
	return swapSuffix(group, suffix, Default)
}

// swapSuffix matches group exactly against our groups under from, never a mere substring.
func swapSuffix(group, from, to string) (string, bool) {
	prefix, ok := strings.CutSuffix(group, "."+from)
	if !ok {
		return group, false
	}
	for _, p := range groupPrefixes {
		if p == prefix {
			return prefix + "." + to, true
		}
	}
	return group, false
}

// groupMapper maps a single API group name; it is Replace or Unreplace bound to a suffix.
type groupMapper func(group string) (string, bool)

func replacer(suffix string) groupMapper {
	return func(group string) (string, bool) { return Replace(group, suffix) }
}

func unreplacer(suffix string) groupMapper {
	return func(group string) (string, bool) { return Unreplace(group, suffix) }
}

// groupVersion maps the group part of an apiVersion / groupVersion string ("group/version").
// Core-group values ("v1") have no group and never match.
func (m groupMapper) groupVersion(gv string) (string, bool) {
	group, version, ok := strings.Cut(gv, "/")
	if !ok {
		return gv, false
	}
	if mapped, ok := m(group); ok {
		return mapped + "/" + version, true
	}
	return gv, false
}

// dottedName maps names of the form "<first>.<group>", such as a CustomResourceDefinition name
// ("jwtauthenticators.authentication.concierge.pinniped.dev") or an APIService name
// ("v1alpha1.login.concierge.pinniped.dev").
func (m groupMapper) dottedName(name string) (string, bool) {
	first, group, ok := strings.Cut(name, ".")
	if !ok {
		return name, false
	}
	if mapped, ok := m(group); ok {
		return first + "." + mapped, true
	}
	return name, false
}
