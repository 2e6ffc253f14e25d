package servingcert

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProvider(t *testing.T) {
	p := newProvider("test")
	assert.Equal(t, "test", p.Name())
	l := &countingListener{}
	p.AddListener(l)

	cert, key := p.CurrentCertKeyContent()
	assert.Nil(t, cert)
	assert.Nil(t, key)
	select {
	case <-p.Ready():
		t.Fatal("ready without a certificate")
	default:
	}

	steps := []struct {
		cert, key     string
		wantListeners int32
	}{
		{cert: "c1", key: "k1", wantListeners: 1},
		{cert: "c1", key: "k1", wantListeners: 1}, // unchanged: nobody told
		{cert: "c2", key: "k2", wantListeners: 2},
		{cert: "c2", key: "k3", wantListeners: 3},
	}
	for _, s := range steps {
		p.set([]byte(s.cert), []byte(s.key))
		cert, key := p.CurrentCertKeyContent()
		assert.Equal(t, s.cert, string(cert))
		assert.Equal(t, s.key, string(key))
		assert.Equal(t, s.wantListeners, l.count.Load())
		select {
		case <-p.Ready():
		default:
			t.Fatal("not ready after set")
		}
	}
}
