// Package apiserver assembles the Concierge's aggregated API server: the TokenCredentialRequest
// and WhoAmIRequest resources under API groups renamed by the configured suffix. It follows
// sample-apiserver's Config -> Complete -> New shape, with the scheme built per suffix instead of
// in package globals.
package apiserver

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"sealion.dev/core/apis/concierge/identity"
	identityv1alpha1 "sealion.dev/core/apis/concierge/identity/v1alpha1"
	"sealion.dev/core/apis/concierge/login"
	loginv1alpha1 "sealion.dev/core/apis/concierge/login/v1alpha1"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/servers/concierge/registry/tokencredentialrequest"
	"sealion.dev/servers/concierge/registry/whoamirequest"
	"sealion.dev/servers/internal/aggregatedapi"
)

// Scheme holds the Concierge's aggregated types under groups renamed for one suffix.
type Scheme struct {
	*runtime.Scheme
	Codecs     serializer.CodecFactory
	LoginGV    schema.GroupVersion
	IdentityGV schema.GroupVersion
}

// NewScheme registers the hub and v1alpha1 types of the login and identity groups under the groups
// renamed for suffix. Conversions and deep copies are registered by Go type, so they apply as is.
func NewScheme(suffix string) (*Scheme, error) {
	if err := groupsuffix.Validate(suffix); err != nil {
		return nil, err
	}
	loginGroup, ok1 := groupsuffix.Replace(loginv1alpha1.GroupName, suffix)
	identityGroup, ok2 := groupsuffix.Replace(identityv1alpha1.GroupName, suffix)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("cannot rename API groups for suffix %q", suffix)
	}
	s := &Scheme{
		Scheme:     runtime.NewScheme(),
		LoginGV:    schema.GroupVersion{Group: loginGroup, Version: loginv1alpha1.SchemeGroupVersion.Version},
		IdentityGV: schema.GroupVersion{Group: identityGroup, Version: identityv1alpha1.SchemeGroupVersion.Version},
	}
	s.AddKnownTypes(s.LoginGV, &loginv1alpha1.TokenCredentialRequest{}, &loginv1alpha1.TokenCredentialRequestList{})
	s.AddKnownTypes(schema.GroupVersion{Group: loginGroup, Version: runtime.APIVersionInternal},
		&login.TokenCredentialRequest{}, &login.TokenCredentialRequestList{})
	s.AddKnownTypes(s.IdentityGV, &identityv1alpha1.WhoAmIRequest{}, &identityv1alpha1.WhoAmIRequestList{})
	s.AddKnownTypes(schema.GroupVersion{Group: identityGroup, Version: runtime.APIVersionInternal},
		&identity.WhoAmIRequest{}, &identity.WhoAmIRequestList{})
	metav1.AddToGroupVersion(s.Scheme, s.LoginGV)
	metav1.AddToGroupVersion(s.Scheme, s.IdentityGV)
	// Unversioned meta types (Status, WatchEvent, ...) that every API server needs.
	metav1.AddToGroupVersion(s.Scheme, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{loginv1alpha1.RegisterConversions, identityv1alpha1.RegisterConversions} {
		if err := add(s.Scheme); err != nil {
			return nil, err
		}
	}
	for _, gv := range []schema.GroupVersion{s.LoginGV, s.IdentityGV} {
		if err := s.SetVersionPriority(gv); err != nil {
			return nil, err
		}
	}
	s.Codecs = serializer.NewCodecFactory(s.Scheme)
	return s, nil
}

// ExtraConfig is what the Concierge adds to a generic API server config.
type ExtraConfig struct {
	Scheme    *Scheme
	Exchanger tokencredentialrequest.Exchanger
}

// Config is a generic API server config plus ours.
type Config struct {
	GenericConfig *genericapiserver.RecommendedConfig
	ExtraConfig   ExtraConfig
}

type completedConfig struct {
	GenericConfig genericapiserver.CompletedConfig
	ExtraConfig   *ExtraConfig
}

// CompletedConfig can only be made by Complete, so New always gets defaulted values.
type CompletedConfig struct {
	*completedConfig
}

// Complete fills in defaults and installs our handler chain.
func (c *Config) Complete() (CompletedConfig, error) {
	if err := aggregatedapi.SetFeatureGates(); err != nil {
		return CompletedConfig{}, err
	}
	c.GenericConfig.BuildHandlerChainFunc = aggregatedapi.BuildHandlerChain
	return CompletedConfig{&completedConfig{
		GenericConfig: c.GenericConfig.Complete(),
		ExtraConfig:   &c.ExtraConfig,
	}}, nil
}

// New builds the server with both API groups installed.
func (c CompletedConfig) New() (*genericapiserver.GenericAPIServer, error) {
	s, err := c.GenericConfig.New("pinniped-concierge", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("creating the generic API server: %w", err)
	}
	sch := c.ExtraConfig.Scheme
	loginGR := sch.LoginGV.WithResource("tokencredentialrequests").GroupResource()
	identityGR := sch.IdentityGV.WithResource("whoamirequests").GroupResource()
	groups := []struct {
		gv       schema.GroupVersion
		resource string
		storage  rest.Storage
	}{
		{sch.LoginGV, loginGR.Resource, tokencredentialrequest.NewREST(c.ExtraConfig.Exchanger, loginGR)},
		{sch.IdentityGV, identityGR.Resource, whoamirequest.NewREST(identityGR)},
	}
	for _, g := range groups {
		info := genericapiserver.NewDefaultAPIGroupInfo(g.gv.Group, sch.Scheme, metav1.ParameterCodec, sch.Codecs)
		info.VersionedResourcesStorageMap[g.gv.Version] = map[string]rest.Storage{g.resource: g.storage}
		if err := s.InstallAPIGroup(&info); err != nil {
			return nil, fmt.Errorf("installing API group %s: %w", g.gv.Group, err)
		}
	}
	return s, nil
}
