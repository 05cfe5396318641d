package publish

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// VerifyOptions say which key or certificates to trust and what else to
// leave out of the comparison, as model_signing verify's flags do.
type VerifyOptions struct {
	PublicKey        string   // PEM file of the key method's public key
	CertificateChain []string // PEM files whose certificates are trusted roots (certificate method)
	IgnorePaths      []string // more paths (relative to the model) to leave out
	Signature        string   // the OMS bundle; empty: DIR/model.sig
	// signingKey, when set, stands for PublicKey: Publish checks a bundle
	// an interrupted publish left with the key it signs with.
	signingKey *ecdsa.PublicKey
}

// Check is one check of a bundle's verification.
type Check struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// Verification is what VerifyBundle found: every check it made, and what
// the bundle claims. Its JSON form is a stable contract: fields are only
// ever added.
type Verification struct {
	Dir        string `json:"dir"`
	Method     string `json:"method,omitempty"` // "key" or "certificate"
	Model      string `json:"model,omitempty"`  // the OMS subject's name
	RootDigest string `json:"root_digest,omitempty"`
	Files      int    `json:"files"`
	// Claims is what rlgate.provenance.json says, when the bundle has one
	// whose signature verifies.
	Claims *ProvenancePredicate `json:"claims,omitempty"`
	Checks []Check              `json:"checks"`
	Failed int                  `json:"failed"`
	OK     bool                 `json:"ok"`
}

func (v *Verification) add(name string, ok bool, format string, args ...any) {
	v.Checks = append(v.Checks, Check{Name: name, OK: ok, Message: fmt.Sprintf(format, args...)})
	if !ok {
		v.Failed++
	}
	v.OK = v.Failed == 0
}

// Check names, as VerifyBundle reports them.
const (
	CheckSchema      = "oms: schema"
	CheckKey         = "oms: key"
	CheckCertificate = "oms: certificate chain"
	CheckSignature   = "oms: signature"
	CheckRootDigest  = "oms: root digest"
	CheckFiles       = "oms: files"
)

// VerifyBundle checks the OMS v1.0 signature of the model directory dir
// the way model_signing verify does (schema, key hint or certificate
// chain, DSSE signature, root digest, every file's SHA-256 with nothing
// missing and nothing unsigned) and, when dir holds rlgate.provenance.json,
// its signature, its subject and the model identity it claims. It returns
// every finding; an error means it could not check at all (an unreadable
// key, say).
func VerifyBundle(ctx context.Context, dir string, o VerifyOptions) (*Verification, error) {
	v := &Verification{Dir: dir, Checks: []Check{}, OK: true}
	sigPath := o.Signature
	var raw []byte
	var err error
	if sigPath == "" {
		sigPath = filepath.Join(dir, SignatureFile)
		raw, err = untrusted.ReadFileIn(dir, SignatureFile, untrusted.SignatureLimit)
	} else {
		raw, err = untrusted.ReadFile(sigPath, untrusted.SignatureLimit)
	}
	if err != nil {
		v.add(CheckSchema, false, "read the signature: %v", err)
		return v, nil
	}
	var b Bundle
	var payload []byte
	err = validateJSON(bundleSchemaID, raw)
	if err == nil {
		err = json.Unmarshal(raw, &b)
	}
	if err == nil {
		payload, err = b.DSSEEnvelope.DecodeB64Payload()
	}
	if err == nil {
		err = validateJSON(statementSchemaID, payload)
	}
	var st *Statement
	if err == nil {
		st, err = parseStatement(payload)
	}
	var pred Predicate
	if err == nil {
		err = json.Unmarshal(st.Predicate, &pred)
	}
	if err != nil {
		v.add(CheckSchema, false, "%s is not an OMS v1.0 bundle: %v", sigPath, err)
		return v, nil
	}
	v.add(CheckSchema, true, "OMS v1.0 bundle (%s) with an in-toto statement of %s", b.MediaType, st.PredicateType)
	v.Model = st.Subject[0].Name

	ver, err := v.signer(b.VerificationMaterial, o)
	if err != nil {
		return nil, err
	}
	if ver != nil {
		if _, err := verifyEnvelope(ctx, ver, b.DSSEEnvelope); err != nil {
			v.add(CheckSignature, false, "the DSSE signature does not verify with the %s: %v", v.Method, err)
		} else {
			v.add(CheckSignature, true, "ECDSA %s signature over the statement verifies", ver.sv.Public().(*ecdsa.PublicKey).Curve.Params().Name)
		}
	}

	root, err := RootDigest(pred.Resources)
	switch claimed := st.Subject[0].Digest["sha256"]; {
	case err != nil:
		v.add(CheckRootDigest, false, "%v", err)
	case claimed != root:
		v.add(CheckRootDigest, false, "the subject's sha256 %s is not the digest of the resources listed, %s", claimed, root)
	default:
		v.RootDigest = root
		v.add(CheckRootDigest, true, "sha256:%s over %d resources", root, len(pred.Resources))
	}

	if err := v.files(ctx, dir, sigPath, pred, o.IgnorePaths); err != nil {
		return nil, err
	}
	if err := v.provenance(ctx, dir, ver, st); err != nil {
		return nil, err
	}
	return v, nil
}

// signer finds the key the bundle says signed it and checks it against
// what the user trusts: the public key given (its hint must match) or a
// chain to a trusted root. It adds the check and returns nil when there is
// no key to verify with.
func (v *Verification) signer(m VerificationMaterial, o VerifyOptions) (*verifier, error) {
	switch {
	case m.PublicKey != nil:
		v.Method = "key"
		pub := o.signingKey
		if pub == nil && o.PublicKey == "" {
			v.add(CheckKey, false, "the bundle is signed with a key; give its public key (--public-key)")
			return nil, nil
		}
		if pub == nil {
			var err error
			if pub, err = loadPublicKey(o.PublicKey); err != nil {
				return nil, err
			}
		}
		ver, err := newVerifier(pub)
		if err != nil {
			return nil, fmt.Errorf("public key %s: %w", o.PublicKey, err)
		}
		if m.PublicKey.Hint != "" && m.PublicKey.Hint != ver.hint {
			v.add(CheckKey, false, "the bundle names key %s; %s is key %s", m.PublicKey.Hint, o.PublicKey, ver.hint)
			return nil, nil
		}
		if len(m.PublicKey.RawBytes) > 0 {
			if k, err := parsePublicKey(m.PublicKey.RawBytes); err != nil || !k.Equal(pub) {
				v.add(CheckKey, false, "the bundle carries another public key than %s", o.PublicKey)
				return nil, nil
			}
		}
		v.add(CheckKey, true, "key %s (%s)", ver.hint, o.PublicKey)
		return ver, nil
	case m.X509CertificateChain != nil:
		v.Method = "certificate"
		if len(o.CertificateChain) == 0 {
			v.add(CheckCertificate, false, "the bundle is signed with a certificate; give the chain to trust (--certificate-chain)")
			return nil, nil
		}
		roots, err := loadCertificates(o.CertificateChain)
		if err != nil {
			return nil, err
		}
		pub, subject, err := verifyChain(m.X509CertificateChain, roots)
		if err != nil {
			v.add(CheckCertificate, false, "%v", err)
			return nil, nil
		}
		ver, err := newVerifier(pub)
		if err != nil {
			v.add(CheckCertificate, false, "signing certificate %s: %v", subject, err)
			return nil, nil
		}
		v.add(CheckCertificate, true, "signing certificate %s chains to a root in %s", subject, strings.Join(o.CertificateChain, ", "))
		return ver, nil
	}
	v.add(CheckKey, false, "the bundle is neither key- nor certificate-signed (a keyless Sigstore bundle?); rlgate checks those two methods only: use model_signing verify sigstore")
	return nil, nil
}

// verifyChain checks the bundle's certificate chain as model_signing does:
// the signing certificate (the first) chains through the others to one of
// roots, at the time it became valid, and may sign (digital signature key
// usage or the code signing extended key usage). It returns the signing
// certificate's key and subject.
func verifyChain(chain *CertificateChain, roots []*x509.Certificate) (*ecdsa.PublicKey, string, error) {
	if len(chain.Certificates) == 0 {
		return nil, "", errors.New("the bundle's certificate chain is empty")
	}
	var certs []*x509.Certificate
	for i, c := range chain.Certificates {
		cert, err := x509.ParseCertificate(c.RawBytes)
		if err != nil {
			return nil, "", fmt.Errorf("certificate %d of the bundle: %w", i, err)
		}
		certs = append(certs, cert)
	}
	leaf := certs[0]
	rootPool, inter := x509.NewCertPool(), x509.NewCertPool()
	for _, r := range roots {
		rootPool.AddCert(r)
	}
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: rootPool, Intermediates: inter, CurrentTime: leaf.NotBefore,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
		return nil, "", fmt.Errorf("signing certificate %s: %w", leaf.Subject, err)
	}
	if leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 && !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageCodeSigning) {
		return nil, "", fmt.Errorf("signing certificate %s may not sign (no digital signature or code signing usage)", leaf.Subject)
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return nil, "", fmt.Errorf("signing certificate %s holds a %T, not an ECDSA key", leaf.Subject, leaf.PublicKey)
	}
	return pub, leaf.Subject.String(), nil
}

// verifyEnvelope checks env's signature with ver (the securesystemslib
// DSSE verifier computes the PAE) and returns the payload.
func verifyEnvelope(ctx context.Context, ver *verifier, env *dsse.Envelope) ([]byte, error) {
	if env.PayloadType != PayloadType {
		return nil, fmt.Errorf("payload type %q, want %q", env.PayloadType, PayloadType)
	}
	ev, err := dsse.NewEnvelopeVerifier(ver.sv)
	if err != nil {
		return nil, err
	}
	_, payload, err := ev.VerifyAndDecode(ctx, env)
	return payload, err
}

// relInside returns p relative to dir, slash-separated, when p lies
// inside dir.
func relInside(dir, p string) (string, bool) {
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(p)
	if err1 != nil || err2 != nil {
		return "", false
	}
	rel, err := filepath.Rel(ad, ap)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// files hashes dir as the statement's serialization says and compares
// every file with the resources signed.
func (v *Verification) files(ctx context.Context, dir, sigPath string, pred Predicate, extra []string) error {
	s := pred.Serialization
	if s.Method != "files" || s.HashType != "sha256" {
		v.add(CheckFiles, false, "serialization %s/%s: rlgate checks the files method with sha256 only (use model_signing verify)", s.Method, s.HashType)
		return nil
	}
	ignore := slices.Concat(s.IgnorePaths, gitPaths)
	for _, p := range append([]string{sigPath}, extra...) {
		if rel, ok := relInside(dir, p); ok {
			ignore = append(ignore, rel)
		} else if p != sigPath {
			return fmt.Errorf("ignore path %s is not inside %s", p, dir)
		}
	}
	got, err := HashModel(ctx, dir, ignore)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		v.add(CheckFiles, false, "%v", err)
		return nil
	}
	v.Files = len(got)
	signed := map[string]Resource{}
	for _, r := range pred.Resources {
		signed[r.Name] = r
	}
	var changed, unsigned []string
	for _, r := range got {
		s, ok := signed[r.Name]
		switch {
		case !ok:
			unsigned = append(unsigned, r.Name)
		case s.Algorithm != r.Algorithm || s.Digest != r.Digest:
			changed = append(changed, r.Name)
		}
		delete(signed, r.Name)
	}
	var missing []string
	for name := range signed {
		missing = append(missing, name)
	}
	slices.Sort(missing)
	if len(changed)+len(unsigned)+len(missing) == 0 {
		v.add(CheckFiles, true, "all %d files have the signed sha256", len(got))
		return nil
	}
	var parts []string
	for _, p := range []struct {
		what  string
		names []string
	}{{"changed", changed}, {"missing", missing}, {"not signed", unsigned}} {
		if len(p.names) > 0 {
			parts = append(parts, p.what+": "+strings.Join(p.names, ", "))
		}
	}
	v.add(CheckFiles, false, "%s", strings.Join(parts, "; "))
	return nil
}
