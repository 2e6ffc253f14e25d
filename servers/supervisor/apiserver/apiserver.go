// Package apiserver assembles the Supervisor's aggregated API server: OIDCClientSecretRequest under
// the clientsecret.supervisor group renamed by the configured suffix. It has the Concierge's
// Config -> Complete -> New shape, and shares its generic parts (servers/internal/aggregatedapi).
package apiserver

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"

	"sealion.dev/core/apis/supervisor/clientsecret"
	clientsecretv1alpha1 "sealion.dev/core/apis/supervisor/clientsecret/v1alpha1"
	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	"sealion.dev/core/groupsuffix"
	"sealion.dev/servers/internal/aggregatedapi"
	"sealion.dev/servers/supervisor/registry/oidcclientsecretrequest"
)

// Scheme holds the Supervisor's aggregated types under the group renamed for one suffix.
type Scheme struct {
	*runtime.Scheme
	Codecs         serializer.CodecFactory
	ClientSecretGV schema.GroupVersion
	// OIDCClientGV is where OIDCClients are (a CRD), for owner references to them.
	OIDCClientGV schema.GroupVersion
}

// NewScheme registers the hub and v1alpha1 types of the clientsecret group under the group renamed
// for suffix. Conversions and deep copies are registered by Go type, so they apply as is.
func NewScheme(suffix string) (*Scheme, error) {
	if err := groupsuffix.Validate(suffix); err != nil {
		return nil, err
	}
	group, ok1 := groupsuffix.Replace(clientsecretv1alpha1.GroupName, suffix)
	configGroup, ok2 := groupsuffix.Replace(configv1alpha1.GroupName, suffix)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("cannot rename API groups for suffix %q", suffix)
	}
	s := &Scheme{
		Scheme:         runtime.NewScheme(),
		ClientSecretGV: schema.GroupVersion{Group: group, Version: clientsecretv1alpha1.SchemeGroupVersion.Version},
		OIDCClientGV:   schema.GroupVersion{Group: configGroup, Version: configv1alpha1.SchemeGroupVersion.Version},
	}
	s.AddKnownTypes(s.ClientSecretGV, &clientsecretv1alpha1.OIDCClientSecretRequest{}, &clientsecretv1alpha1.OIDCClientSecretRequestList{})
	s.AddKnownTypes(schema.GroupVersion{Group: group, Version: runtime.APIVersionInternal},
		&clientsecret.OIDCClientSecretRequest{}, &clientsecret.OIDCClientSecretRequestList{})
	metav1.AddToGroupVersion(s.Scheme, s.ClientSecretGV)
	// Unversioned meta types (Status, WatchEvent, ...) that every API server needs.
	metav1.AddToGroupVersion(s.Scheme, schema.GroupVersion{Version: "v1"})
	if err := clientsecretv1alpha1.RegisterConversions(s.Scheme); err != nil {
		return nil, err
	}
	if err := s.SetVersionPriority(s.ClientSecretGV); err != nil {
		return nil, err
	}
	s.Codecs = serializer.NewCodecFactory(s.Scheme)
	return s, nil
}

// ExtraConfig is what the Supervisor adds to a generic API server config.
type ExtraConfig struct {
	Scheme *Scheme
	// ClientSecrets configures the OIDCClientSecretRequest storage; its OIDCClientAPIVersion is
	// filled in from Scheme when empty.
	ClientSecrets oidcclientsecretrequest.Config
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

// Complete checks the configuration, fills in defaults and installs the shared handler chain.
func (c *Config) Complete() (CompletedConfig, error) {
	if cs := c.ExtraConfig.ClientSecrets; c.ExtraConfig.Scheme == nil || cs.Namespace == "" || cs.OIDCClients == nil || cs.Store == nil {
		return CompletedConfig{}, errors.New("the Supervisor's aggregated API needs a scheme, a namespace, an OIDCClient reader and a client secret store")
	}
	if err := aggregatedapi.SetFeatureGates(); err != nil {
		return CompletedConfig{}, err
	}
	c.GenericConfig.BuildHandlerChainFunc = aggregatedapi.BuildHandlerChain
	if c.ExtraConfig.ClientSecrets.OIDCClientAPIVersion == "" {
		c.ExtraConfig.ClientSecrets.OIDCClientAPIVersion = c.ExtraConfig.Scheme.OIDCClientGV.String()
	}
	return CompletedConfig{&completedConfig{
		GenericConfig: c.GenericConfig.Complete(),
		ExtraConfig:   &c.ExtraConfig,
	}}, nil
}

// New builds the server with the clientsecret group installed.
func (c CompletedConfig) New() (*genericapiserver.GenericAPIServer, error) {
	s, err := c.GenericConfig.New("pinniped-supervisor", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("creating the generic API server: %w", err)
	}
	sch := c.ExtraConfig.Scheme
	gr := sch.ClientSecretGV.WithResource("oidcclientsecretrequests").GroupResource()
	info := genericapiserver.NewDefaultAPIGroupInfo(gr.Group, sch.Scheme, metav1.ParameterCodec, sch.Codecs)
	info.VersionedResourcesStorageMap[sch.ClientSecretGV.Version] = map[string]rest.Storage{
		gr.Resource: oidcclientsecretrequest.NewREST(c.ExtraConfig.ClientSecrets, gr),
	}
	if err := s.InstallAPIGroup(&info); err != nil {
		return nil, fmt.Errorf("installing API group %s: %w", gr.Group, err)
	}
	return s, nil
}
