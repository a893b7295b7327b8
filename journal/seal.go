package journal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// sealedPrefix starts a sealed payload, so that a payload stored in clear (with
// StoreArguments) is never mistaken for one.
var sealedPrefix = []byte("abj1:")

// payloadAEAD derives the payload key from the secret (so that the hash key and the
// encryption key differ) and returns AES-256-GCM under it.
func payloadAEAD(secret []byte) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("agentbreaker/journal/queue-payload/v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts a queue payload, bound to its item id, unless StoreArguments keeps
// payloads in clear. nil stays nil.
func (j *Journal) seal(id string, payload []byte) []byte {
	if payload == nil || j.cfg.StoreArguments {
		return payload
	}
	nonce := make([]byte, j.aead.NonceSize())
	_, _ = rand.Read(nonce)
	out := append(append([]byte{}, sealedPrefix...), nonce...)
	return j.aead.Seal(out, nonce, payload, []byte(id))
}

// open decrypts a stored payload. A sealed payload is opened whatever StoreArguments
// says now; one stored in clear (with StoreArguments, or by an older build) is
// returned as it is.
func (j *Journal) open(id string, stored []byte) ([]byte, error) {
	if !bytes.HasPrefix(stored, sealedPrefix) {
		return stored, nil
	}
	rest := stored[len(sealedPrefix):]
	n := j.aead.NonceSize()
	if len(rest) < n {
		return nil, fmt.Errorf("sealed payload is %d bytes, shorter than its nonce", len(rest))
	}
	plain, err := j.aead.Open(nil, rest[:n], rest[n:], []byte(id))
	if err != nil {
		return nil, errors.New("sealed payload does not open under this journal's key (another key, or altered)")
	}
	return plain, nil
}
