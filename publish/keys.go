package publish

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/secure-systems-lab/go-securesystemslib/signerverifier"
)

// PublicKeySuffix is appended to a private key's file name for its public
// key.
const PublicKeySuffix = ".pub"

// Signer signs DSSE envelopes with an ECDSA key (P-256, P-384 or P-521,
// hashed with SHA-256, SHA-384 or SHA-512 as the curve asks, as OMS's key
// method does).
type Signer struct {
	sv   *signerverifier.ECDSASignerVerifier
	Hint string // hex SHA-256 of the public key's PEM
}

// verifier checks DSSE signatures made by one ECDSA public key.
type verifier struct {
	sv   *signerverifier.ECDSASignerVerifier
	hint string
}

// publicPEM is the PEM encoding of pub that OMS hints are the SHA-256 of:
// PKIX SubjectPublicKeyInfo, as model_signing writes it.
func publicPEM(pub *ecdsa.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// Hint is the OMS key hint of pub: the hex SHA-256 of its PEM.
func Hint(pub *ecdsa.PublicKey) (string, error) {
	p, err := publicPEM(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(p)
	return hex.EncodeToString(sum[:]), nil
}

// supportedCurve refuses every curve OMS's key method does not name.
func supportedCurve(pub *ecdsa.PublicKey) error {
	switch pub.Curve {
	case elliptic.P256(), elliptic.P384(), elliptic.P521():
		return nil
	}
	return fmt.Errorf("ECDSA curve %s is not one OMS allows (P-256, P-384, P-521)", pub.Curve.Params().Name)
}

// newVerifier wraps pub in the securesystemslib ECDSA verifier.
func newVerifier(pub *ecdsa.PublicKey) (*verifier, error) {
	if err := supportedCurve(pub); err != nil {
		return nil, err
	}
	p, err := publicPEM(pub)
	if err != nil {
		return nil, err
	}
	sv, err := signerverifier.NewECDSASignerVerifierFromSSLibKey(&signerverifier.SSLibKey{
		KeyType: signerverifier.ECDSAKeyType, KeyVal: signerverifier.KeyVal{Public: string(p)}})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(p)
	return &verifier{sv: sv, hint: hex.EncodeToString(sum[:])}, nil
}

// GenerateKey writes a new ECDSA P-256 key pair: the private key as PKCS #8
// PEM to path (mode 0600) and the public key as PEM to path + ".pub". It
// refuses to overwrite either file. It returns the key's OMS hint.
func GenerateKey(path string) (string, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return "", err
	}
	pub, err := publicPEM(&k.PublicKey)
	if err != nil {
		return "", err
	}
	for _, p := range []string{path, path + PublicKeySuffix} {
		if _, err := os.Lstat(p); err == nil {
			return "", &ledger.Error{Op: "keygen", Path: p, Err: os.ErrExist, Hint: "choose another --out; rlgate never overwrites a key"}
		}
	}
	if err := writeNew(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return "", err
	}
	if err := writeNew(path+PublicKeySuffix, pub, 0o644); err != nil {
		os.Remove(path)
		return "", err
	}
	return Hint(&k.PublicKey)
}

// writeNew writes a file that must not exist yet, and syncs it.
func writeNew(path string, b []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// LoadSigner reads an ECDSA private key from a PEM file (PKCS #8 or SEC 1).
func LoadSigner(path string) (*Signer, error) {
	raw, err := untrusted.ReadFile(path, untrusted.KeyLimit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &ledger.Error{Op: "read signing key", Path: path, Err: err, Hint: "rlgate keygen --out " + path}
	}
	if err != nil {
		return nil, fmt.Errorf("read signing key: %w", err)
	}
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, fmt.Errorf("read signing key %s: no PEM block", path)
	}
	var k any
	switch block.Type {
	case "PRIVATE KEY":
		k, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		k, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		err = fmt.Errorf("a %q PEM block is not a private key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("read signing key %s: %w", path, err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("read signing key %s: a %T is not an ECDSA key, which OMS's key method needs", path, k)
	}
	if err := supportedCurve(&ek.PublicKey); err != nil {
		return nil, fmt.Errorf("read signing key %s: %w", path, err)
	}
	pub, err := publicPEM(&ek.PublicKey)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(ek)
	if err != nil {
		return nil, err
	}
	sv, err := signerverifier.NewECDSASignerVerifierFromSSLibKey(&signerverifier.SSLibKey{KeyType: signerverifier.ECDSAKeyType,
		KeyVal: signerverifier.KeyVal{Public: string(pub), Private: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))}})
	if err != nil {
		return nil, fmt.Errorf("read signing key %s: %w", path, err)
	}
	hint, err := Hint(&ek.PublicKey)
	if err != nil {
		return nil, err
	}
	return &Signer{sv: sv, Hint: hint}, nil
}

// loadPublicKey reads an ECDSA public key from a PEM file.
func loadPublicKey(path string) (*ecdsa.PublicKey, error) {
	raw, err := untrusted.ReadFile(path, untrusted.KeyLimit)
	if err != nil {
		return nil, fmt.Errorf("read public key: %w", err)
	}
	k, err := parsePublicKey(raw)
	if err != nil {
		return nil, fmt.Errorf("read public key %s: %w", path, err)
	}
	return k, nil
}

// parsePublicKey reads an ECDSA public key from the first PEM block of raw
// (text before the block, as certtool writes it, is skipped).
func parsePublicKey(raw []byte) (*ecdsa.PublicKey, error) {
	block, _ := pem.Decode(raw)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("no PUBLIC KEY PEM block")
	}
	k, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	ek, ok := k.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T is not an ECDSA key", k)
	}
	return ek, nil
}

// loadCertificates reads every CERTIFICATE PEM block of the files.
func loadCertificates(paths []string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for _, p := range paths {
		raw, err := untrusted.ReadFile(p, untrusted.KeyLimit)
		if err != nil {
			return nil, fmt.Errorf("read certificate chain: %w", err)
		}
		for {
			var block *pem.Block
			block, raw = pem.Decode(raw)
			if block == nil {
				break
			}
			if block.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("read certificate chain %s: %w", p, err)
			}
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("read certificate chain: no CERTIFICATE PEM block in " + fmt.Sprint(paths))
	}
	return out, nil
}
