package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/ory/fosite"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"sealion.dev/servers/supervisor/internal/oauth/device"
)

// Device authorizations (RFC 8628) are stored as one more kind of record, an addition to
// Pinniped's (whose garbage collector still deletes them when they expire): a Secret named by
// the device code's signature, labelled with the user code's, so that both the polling client and
// the verification page find it without either code being stored.
const (
	typeDevice = "device"
	// userCodeLabel holds the user code's signature as Secret names hold signatures (nameOf: 52
	// letters and digits for an HMAC-SHA256, a valid label value, which base64url is not).
	userCodeLabel = "storage.pinniped.dev/user-code"
)

// DeviceAuthorization is the stored state of one device authorization request.
type DeviceAuthorization struct {
	device.Authorization
	ClientID string   `json:"clientID"`
	Scopes   []string `json:"scopes"`
	// IDPName and IDPType are the identity provider the client named (pinniped_idp_name and
	// pinniped_idp_type), for the login the verification page starts; empty for any.
	IDPName string `json:"idpName,omitempty"`
	IDPType string `json:"idpType,omitempty"`
	// Attempts counts the times the user code was entered at the verification page.
	Attempts int `json:"attempts"`
	// Code and Verifier are the authorization code of the approved login and its PKCE verifier,
	// which the next poll redeems. They are sealed in the Secret, bound to it.
	Code     string `json:"code,omitempty"`
	Verifier string `json:"verifier,omitempty"`
}

// Device is a stored device authorization as read, to be updated by UpdateDevice.
type Device struct {
	DeviceAuthorization
	secret *corev1.Secret
}

// Name names the stored record, for the verification page's sealed state.
func (d *Device) Name() string { return d.secret.Name }

// ErrDeviceChanged is the error of an update that lost a race: another request changed the
// record since it was read.
var ErrDeviceChanged = errors.New("the device authorization changed concurrently")

// CreateDevice stores a new device authorization under the signatures of its device and user
// codes. It is kept until a while after it expires, so that a late poll still hears that it has.
func (s *Storage) CreateDevice(ctx context.Context, deviceSignature, userSignature string, a DeviceAuthorization) error {
	name := SecretName(typeDevice, deviceSignature)
	data, err := s.encodeDevice(name, a)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{TypeLabel: typeDevice, userCodeLabel: nameOf(userSignature)},
			Annotations: map[string]string{GarbageCollectAfterAnnotation: a.ExpiresAt.Add(storageLifetimes[typeDevice]).UTC().Format(time.RFC3339)},
		},
		Type: SecretType(typeDevice),
		Data: map[string][]byte{DataKey: data, VersionKey: []byte(storageVersion)},
	}
	if _, err := s.secrets.Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("storing %s: %w", typeDevice, err)
	}
	return nil
}

// DeviceByCode reads the device authorization of a device code's signature; fosite.ErrNotFound
// when there is none.
func (s *Storage) DeviceByCode(ctx context.Context, deviceSignature string) (*Device, error) {
	return s.DeviceByName(ctx, SecretName(typeDevice, deviceSignature))
}

// DeviceByName reads the device authorization stored as name.
func (s *Storage) DeviceByName(ctx context.Context, name string) (*Device, error) {
	secret, err := s.secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fosite.ErrNotFound.WithWrap(err)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", typeDevice, err)
	}
	return s.decodeDevice(secret)
}

// DeviceByUserCode finds the device authorization of a user code's signature; fosite.ErrNotFound
// when there is none.
func (s *Storage) DeviceByUserCode(ctx context.Context, userSignature string) (*Device, error) {
	selector := labels.Set{TypeLabel: typeDevice, userCodeLabel: nameOf(userSignature)}.String()
	list, err := s.secrets.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("finding %s by user code: %w", typeDevice, err)
	}
	if len(list.Items) != 1 {
		// None, or (against odds of 2^-34 per pair alive together) two that share a user code:
		// neither is given to a person who cannot tell which device asked.
		return nil, fosite.ErrNotFound.WithHintf("%d device authorizations have this user code", len(list.Items))
	}
	return s.decodeDevice(&list.Items[0])
}

// UpdateDevice writes d back, only over the version it was read as: of two concurrent updates
// (two polls, a poll and an approval) exactly one passes, the other gets ErrDeviceChanged.
func (s *Storage) UpdateDevice(ctx context.Context, d *Device) error {
	data, err := s.encodeDevice(d.secret.Name, d.DeviceAuthorization)
	if err != nil {
		return err
	}
	secret := d.secret.DeepCopy()
	secret.Data[DataKey] = data
	updated, err := s.secrets.Update(ctx, secret, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		return fmt.Errorf("%s: %w", typeDevice, ErrDeviceChanged)
	case err != nil:
		return fmt.Errorf("updating %s: %w", typeDevice, err)
	}
	d.secret = updated
	return nil
}

// storedDevice is the JSON of a device authorization in its Secret, in the record layout of the
// other kinds.
type storedDevice struct {
	Device  DeviceAuthorization `json:"device"`
	Version string              `json:"version"`
}

// encodeDevice is the stored JSON of a, its code and verifier sealed to the Secret's name.
func (s *Storage) encodeDevice(name string, a DeviceAuthorization) ([]byte, error) {
	for _, v := range []*string{&a.Code, &a.Verifier} {
		if *v == "" {
			continue
		}
		sealed, err := s.keys.Seal(*v, name)
		if err != nil {
			return nil, fmt.Errorf("sealing %s: %w", typeDevice, err)
		}
		*v = sealed
	}
	return json.Marshal(storedDevice{Device: a, Version: recordVersion})
}

func (s *Storage) decodeDevice(secret *corev1.Secret) (*Device, error) {
	if secret.Type != SecretType(typeDevice) || secret.Labels[TypeLabel] != typeDevice || string(secret.Data[VersionKey]) != storageVersion {
		return nil, fosite.ErrNotFound.WithHintf("%s %s has an unknown type or version", typeDevice, secret.Name)
	}
	var stored storedDevice
	if err := json.Unmarshal(secret.Data[DataKey], &stored); err != nil || stored.Version != recordVersion {
		return nil, fosite.ErrNotFound.WithHintf("%s %s holds no record of this version", typeDevice, secret.Name)
	}
	d := &Device{DeviceAuthorization: stored.Device, secret: secret}
	for _, v := range []*string{&d.Code, &d.Verifier} {
		if *v == "" {
			continue
		}
		opened, err := s.keys.Open(*v, secret.Name)
		if err != nil {
			// Its key was retired: the approved login cannot be redeemed, the person logs in again.
			return nil, fosite.ErrNotFound.WithHintf("stored %s cannot be opened", typeDevice).WithWrap(err)
		}
		*v = opened
	}
	return d, nil
}
