package authenticator

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	conciergeclientset "sealion.dev/core/generated/concierge/clientset/versioned"
	authinformers "sealion.dev/core/generated/concierge/informers/externalversions/authentication/v1alpha1"
	"sealion.dev/servers/concierge/internal/authenticator/checks"
	"sealion.dev/servers/concierge/internal/authenticator/jwt"
	"sealion.dev/servers/concierge/internal/authenticator/webhook"
	"sealion.dev/servers/concierge/internal/authncache"
)

// NewJWT returns the JWTAuthenticator controller.
func NewJWT(s Shared, client conciergeclientset.Interface, informer authinformers.JWTAuthenticatorInformer) *Controller[*authv1alpha1.JWTAuthenticator] {
	return newController(s, jwtKind(client, informer), timing)
}

// NewWebhook returns the WebhookAuthenticator controller.
func NewWebhook(s Shared, client conciergeclientset.Interface, informer authinformers.WebhookAuthenticatorInformer) *Controller[*authv1alpha1.WebhookAuthenticator] {
	return newController(s, webhookKind(client, informer), timing)
}

func jwtKind(client conciergeclientset.Interface, informer authinformers.JWTAuthenticatorInformer) kind[*authv1alpha1.JWTAuthenticator] {
	lister := informer.Lister()
	return kind[*authv1alpha1.JWTAuthenticator]{
		name: "JWTAuthenticator",
		conditionTypes: []string{
			authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ConditionIssuerURLValid,
			authv1alpha1.ConditionDiscoveryURLValid, authv1alpha1.ConditionJWKSURLValid,
			authv1alpha1.ConditionJWKSFetchValid, authv1alpha1.ConditionAuthenticatorValid, authv1alpha1.ConditionReady,
		},
		informer:   informer.Informer(),
		get:        lister.Get,
		list:       listAll(lister.List),
		spec:       func(o *authv1alpha1.JWTAuthenticator) any { return o.Spec },
		tls:        func(o *authv1alpha1.JWTAuthenticator) *authv1alpha1.TLSSpec { return o.Spec.TLS },
		conditions: func(o *authv1alpha1.JWTAuthenticator) []metav1.Condition { return o.Status.Conditions },
		phase:      func(o *authv1alpha1.JWTAuthenticator) authv1alpha1.Phase { return o.Status.Phase },
		build: func(ctx context.Context, o *authv1alpha1.JWTAuthenticator, caBundle []byte) (authncache.Value, checks.List) {
			a, steps := jwt.New(ctx, jwt.Config{
				Issuer: o.Spec.Issuer, Audience: o.Spec.Audience,
				Claims:               o.Spec.Claims,
				ClaimValidationRules: o.Spec.ClaimValidationRules,
				UserValidationRules:  o.Spec.UserValidationRules,
				CABundle:             caBundle,
			})
			if a == nil {
				return nil, steps
			}
			return a, steps
		},
		urlCondition: authv1alpha1.ConditionIssuerURLValid,
		checkURL: func(o *authv1alpha1.JWTAuthenticator, l *checks.List) bool {
			return jwt.CheckIssuerURL(l, o.Spec.Issuer)
		},
		updateStatus: func(ctx context.Context, o *authv1alpha1.JWTAuthenticator, conds []metav1.Condition, phase authv1alpha1.Phase) error {
			o = o.DeepCopy()
			o.Status.Conditions, o.Status.Phase = conds, phase
			_, err := client.AuthenticationV1alpha1().JWTAuthenticators().UpdateStatus(ctx, o, metav1.UpdateOptions{})
			return err
		},
	}
}

func webhookKind(client conciergeclientset.Interface, informer authinformers.WebhookAuthenticatorInformer) kind[*authv1alpha1.WebhookAuthenticator] {
	lister := informer.Lister()
	return kind[*authv1alpha1.WebhookAuthenticator]{
		name: "WebhookAuthenticator",
		conditionTypes: []string{
			authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ConditionEndpointURLValid,
			authv1alpha1.ConditionWebhookConnectionValid, authv1alpha1.ConditionAuthenticatorValid, authv1alpha1.ConditionReady,
		},
		informer:   informer.Informer(),
		get:        lister.Get,
		list:       listAll(lister.List),
		spec:       func(o *authv1alpha1.WebhookAuthenticator) any { return o.Spec },
		tls:        func(o *authv1alpha1.WebhookAuthenticator) *authv1alpha1.TLSSpec { return o.Spec.TLS },
		conditions: func(o *authv1alpha1.WebhookAuthenticator) []metav1.Condition { return o.Status.Conditions },
		phase:      func(o *authv1alpha1.WebhookAuthenticator) authv1alpha1.Phase { return o.Status.Phase },
		build: func(ctx context.Context, o *authv1alpha1.WebhookAuthenticator, caBundle []byte) (authncache.Value, checks.List) {
			a, steps := webhook.New(ctx, webhook.Config{Endpoint: o.Spec.Endpoint, CABundle: caBundle})
			if a == nil {
				return nil, steps
			}
			return a, steps
		},
		urlCondition: authv1alpha1.ConditionEndpointURLValid,
		checkURL: func(o *authv1alpha1.WebhookAuthenticator, l *checks.List) bool {
			_, _, ok := webhook.CheckEndpointURL(l, o.Spec.Endpoint)
			return ok
		},
		updateStatus: func(ctx context.Context, o *authv1alpha1.WebhookAuthenticator, conds []metav1.Condition, phase authv1alpha1.Phase) error {
			o = o.DeepCopy()
			o.Status.Conditions, o.Status.Phase = conds, phase
			_, err := client.AuthenticationV1alpha1().WebhookAuthenticators().UpdateStatus(ctx, o, metav1.UpdateOptions{})
			return err
		},
	}
}
