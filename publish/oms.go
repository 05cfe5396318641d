package publish

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	ita1 "github.com/in-toto/attestation/go/v1"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// The fixed names of OMS v1.0 (ossf/model-signing-spec, as the reference
// signer model_signing writes them).
const (
	// SignatureFile is the OMS bundle's name inside a published directory.
	SignatureFile = "model.sig"
	// BundleMediaType is the Sigstore bundle version the reference signer
	// writes for the key and certificate methods.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// OMSPredicateType is the predicate type of an OMS v1.0 statement.
	OMSPredicateType = "https://model_signing/signature/v1.0"
)

// gitPaths are ignored by model_signing unless told otherwise; rlgate
// ignores them too, when it signs and when it verifies.
var gitPaths = []string{".git", ".gitattributes", ".github", ".gitignore"}

// Resource is one file of an OMS manifest: its slash-separated path from
// the model root and its digest.
type Resource struct {
	Name      string `json:"name"`
	Algorithm string `json:"algorithm"`
	Digest    string `json:"digest"` // hex
}

// Serialization is how the files were enumerated and hashed.
type Serialization struct {
	Method        string   `json:"method"`
	HashType      string   `json:"hash_type"`
	AllowSymlinks bool     `json:"allow_symlinks"`
	IgnorePaths   []string `json:"ignore_paths,omitempty"`
	ShardSize     int64    `json:"shard_size,omitempty"`
}

// Predicate is the OMS v1.0 predicate.
type Predicate struct {
	Resources     []Resource    `json:"resources"`
	Serialization Serialization `json:"serialization"`
}

// Subject is an in-toto subject: a name and a digest set.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Statement is an in-toto Statement v1 as read back from a payload.
type Statement struct {
	Type          string          `json:"_type"`
	Subject       []Subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

// Bundle is a Sigstore bundle holding a DSSE envelope, as OMS uses it.
type Bundle struct {
	MediaType            string               `json:"mediaType"`
	VerificationMaterial VerificationMaterial `json:"verificationMaterial"`
	DSSEEnvelope         *dsse.Envelope       `json:"dsseEnvelope"`
}

// VerificationMaterial says which key or certificate signed a bundle.
type VerificationMaterial struct {
	PublicKey            *PublicKeyIdentifier `json:"publicKey,omitempty"`
	X509CertificateChain *CertificateChain    `json:"x509CertificateChain,omitempty"`
	Certificate          json.RawMessage      `json:"certificate,omitempty"` // keyless Sigstore: not verified here
	TlogEntries          []json.RawMessage    `json:"tlogEntries"`
}

// PublicKeyIdentifier names the signing key: hint is the hex SHA-256 of
// its PEM; bundles before model_signing v1.1 carried the PEM itself.
type PublicKeyIdentifier struct {
	Hint       string `json:"hint,omitempty"`
	RawBytes   []byte `json:"rawBytes,omitempty"`
	KeyDetails string `json:"keyDetails,omitempty"`
}

// CertificateChain is the signing certificate followed by the chain up to
// (and possibly including) a root.
type CertificateChain struct {
	Certificates []struct {
		RawBytes []byte `json:"rawBytes"` // DER
	} `json:"certificates"`
}

// ignored reports whether rel (slash-separated) is one of paths or lies
// under one of them, as model_signing matches ignore paths.
func ignored(rel string, paths []string) bool {
	for _, p := range paths {
		p = strings.TrimSuffix(p, "/")
		if rel == p || strings.HasPrefix(rel, p+"/") {
			return true
		}
	}
	return false
}

// HashModel lists every regular file under dir that no ignore path covers,
// with its SHA-256, sorted by name: the resources of an OMS manifest with
// the "files" method. Files are hashed in parallel. A symlink or any other
// non-regular file is refused, as allow_symlinks false requires.
func HashModel(ctx context.Context, dir string, ignore []string) ([]Resource, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if ignored(rel, ignore) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
		case d.Type().IsRegular():
			names = append(names, rel)
		default:
			return fmt.Errorf("hash model %s: %s is not a regular file (OMS allow_symlinks is false)", dir, rel)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := make([]Resource, len(names))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, name := range names {
		g.Go(func() error {
			d, err := sha256File(ctx, dir, name)
			if err != nil {
				return fmt.Errorf("hash model %s: %w", dir, err)
			}
			out[i] = Resource{Name: name, Algorithm: "sha256", Digest: d}
			return nil
		})
	}
	return out, g.Wait()
}

// sha256File returns the hex SHA-256 of the file name inside dir, reading
// it in 1 MiB pieces and stopping between them when ctx is canceled. It
// opens only a regular file inside dir, not a link or a FIFO swapped in
// since the walk saw the name.
func sha256File(ctx context.Context, dir, name string) (string, error) {
	f, err := untrusted.OpenIn(dir, name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		if err != nil {
			return "", err
		}
	}
}

// RootDigest is the OMS subject digest: the hex SHA-256 of the resources'
// raw digests concatenated in their (name) order.
func RootDigest(rs []Resource) (string, error) {
	h := sha256.New()
	for _, r := range rs {
		b, err := hex.DecodeString(r.Digest)
		if err != nil {
			return "", fmt.Errorf("resource %s: digest %q is not hex", r.Name, r.Digest)
		}
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// statementJSON builds an in-toto Statement v1 with one subject through
// the in-toto Go bindings, checks it with their Validate, and returns it
// as canonical JSON.
func statementJSON(name, sha256Hex, predicateType string, predicate any) ([]byte, error) {
	raw, err := json.Marshal(predicate)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	pb, err := structpb.NewStruct(m)
	if err != nil {
		return nil, fmt.Errorf("statement predicate: %w", err)
	}
	st := &ita1.Statement{
		Type:          ita1.StatementTypeUri,
		Subject:       []*ita1.ResourceDescriptor{{Name: name, Digest: map[string]string{"sha256": sha256Hex}}},
		PredicateType: predicateType,
		Predicate:     pb,
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("in-toto statement: %w", err)
	}
	out, err := protojson.Marshal(st)
	if err != nil {
		return nil, err
	}
	return ledger.Canonicalize(out)
}

// parseStatement reads an in-toto Statement v1 payload: the in-toto
// bindings validate it, then it is decoded for its fields.
func parseStatement(payload []byte) (*Statement, error) {
	var pb ita1.Statement
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(payload, &pb); err != nil {
		return nil, fmt.Errorf("in-toto statement: %w", err)
	}
	if err := pb.Validate(); err != nil {
		return nil, fmt.Errorf("in-toto statement: %w", err)
	}
	var st Statement
	if err := json.Unmarshal(payload, &st); err != nil {
		return nil, fmt.Errorf("in-toto statement: %w", err)
	}
	return &st, nil
}

// signStatement wraps payload in a DSSE envelope signed by s.
func signStatement(ctx context.Context, s *Signer, payload []byte) (*dsse.Envelope, error) {
	es, err := dsse.NewEnvelopeSigner(s.sv)
	if err != nil {
		return nil, err
	}
	return es.SignPayload(ctx, PayloadType, payload)
}

// SignModel hashes the model directory dir (every file but the ignore
// paths, the signature file and git's files) and returns the OMS v1.0
// bundle that signs it with the key method, ready to be written as
// model.sig, with its resources and root digest. The bundle is checked
// against the OMS schemas before it is returned.
func SignModel(ctx context.Context, dir, name string, ignore []string, s *Signer) ([]byte, []Resource, string, error) {
	ignore = slices.Concat([]string{SignatureFile}, ignore, gitPaths)
	rs, err := HashModel(ctx, dir, ignore)
	if err != nil {
		return nil, nil, "", err
	}
	root, err := RootDigest(rs)
	if err != nil {
		return nil, nil, "", err
	}
	pred := Predicate{Resources: rs, Serialization: Serialization{Method: "files", HashType: "sha256", IgnorePaths: ignore}}
	payload, err := statementJSON(name, root, OMSPredicateType, pred)
	if err != nil {
		return nil, nil, "", err
	}
	env, err := signStatement(ctx, s, payload)
	if err != nil {
		return nil, nil, "", fmt.Errorf("sign %s: %w", dir, err)
	}
	b := Bundle{MediaType: BundleMediaType, DSSEEnvelope: env,
		VerificationMaterial: VerificationMaterial{PublicKey: &PublicKeyIdentifier{Hint: s.Hint}, TlogEntries: []json.RawMessage{}}}
	out, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return nil, nil, "", err
	}
	if err := validateOMS(out, payload); err != nil {
		return nil, nil, "", fmt.Errorf("sign %s: the bundle written does not follow OMS v1.0: %w", dir, err)
	}
	return append(out, '\n'), rs, root, nil
}
