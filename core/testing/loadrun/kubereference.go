package loadrun

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// KubeReference is the operation whose rate a load test divides its own by: a SelfSubjectReview,
// which the kube-apiserver answers itself from the request's authentication alone (no storage, no
// aggregated server, none of our code), through a client of cfg without client-go's rate limit.
// A server's rate over it, measured in the same run, does not depend on the machine's speed,
// so the short form of make bench can gate it on whatever machine CI has.
func KubeReference(cfg *rest.Config) (func(ctx context.Context, client int) error, error) {
	unthrottled := rest.CopyConfig(cfg)
	unthrottled.QPS = -1
	kube, err := kubernetes.NewForConfig(unthrottled)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, _ int) error {
		_, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		return err
	}, nil
}
