package sessionstest

import (
	"time"

	"sealion.dev/servers/supervisor/internal/tokenseal"
)

// Keys returns a ready ring with one key, as the sessionkeys controller loads it.
func Keys() *tokenseal.Ring {
	keys, err := tokenseal.ParseKeys(map[string][]byte{tokenseal.KeyName(time.Now().Add(-time.Hour)): tokenseal.NewKeyMaterial()})
	if err != nil {
		panic(err) // a key made just above is always valid
	}
	ring := tokenseal.NewRing()
	ring.Set(keys)
	return ring
}
