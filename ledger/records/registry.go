package records

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
)

// versions is, for every kind, the versions of its body this build reads,
// oldest first. Every body written so far is version 1 (docs/FORMAT.md,
// "Body versions"); a kind whose body changes shape gets version 2 here,
// a type registered for it, and the version field in the bodies it writes.
var versions = map[string][]int{
	KindInit: {1}, KindRunStart: {1}, KindRunEnd: {1}, KindRunResume: {1},
	KindArtifact: {1}, KindMetrics: {1, 2}, KindOutcomes: {1}, KindLog: {1},
	KindGPUSamples: {1}, KindPreflight: {1}, KindTrajectories: {1},
	KindGold: {1}, KindSplit: {1}, KindBudget: {1}, KindReward: {1},
	KindTraining: {1}, KindIdentity: {1}, KindWeights: {1},
	KindComparison: {1}, KindVerdict: {1}, KindRequest: {1}, KindPublish: {1},
	KindReproduce: {1},
}

// VersionField is the top-level body field that names a body's version
// from version 2 on; a body without it is version 1.
const VersionField = "body_version"

// registry maps kind -> version -> the Go type of that version's body.
// The packages that own the types fill it from their init functions, so
// it is complete in any program that links them (a test holds rlgate's
// binary to that).
var registry struct {
	sync.RWMutex
	types map[string]map[int]reflect.Type
}

// Kinds returns every kind, sorted.
func Kinds() []string {
	ks := make([]string, 0, len(versions))
	for k := range versions {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// Versions returns the versions of kind's body this build reads, oldest
// first, or nil for a kind it does not know.
func Versions(kind string) []int { return slices.Clone(versions[kind]) }

// Register records T as the body type of version of kind. It panics when
// the kind or version is not declared above or another type holds the
// slot: both are mistakes in the program, found when it starts.
func Register[T any](kind string, version int) {
	if !slices.Contains(versions[kind], version) {
		panic(fmt.Sprintf("records: register %v as %s version %d, which records does not declare", reflect.TypeFor[T](), kind, version))
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.types == nil {
		registry.types = map[string]map[int]reflect.Type{}
	}
	if registry.types[kind] == nil {
		registry.types[kind] = map[int]reflect.Type{}
	}
	ty := reflect.TypeFor[T]()
	if old, ok := registry.types[kind][version]; ok && old != ty {
		panic(fmt.Sprintf("records: %s version %d is registered as %v; cannot register %v too", kind, version, old, ty))
	}
	registry.types[kind][version] = ty
}

// Type returns the Go type registered for version of kind.
func Type(kind string, version int) (reflect.Type, bool) {
	registry.RLock()
	defer registry.RUnlock()
	ty, ok := registry.types[kind][version]
	return ty, ok
}

// versionMarker is what a body naming its version contains; bodies without
// it (every body written so far) are version 1 without being parsed twice.
var versionMarker = []byte(`"` + VersionField + `":`)

// BodyVersion returns the version of a body: its top-level VersionField,
// or 1 when it has none.
func BodyVersion(body []byte) (int, error) {
	if !bytes.Contains(body, versionMarker) {
		return 1, nil
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		return 0, err
	}
	raw, ok := v[VersionField]
	if !ok { // the marker was in a nested object
		return 1, nil
	}
	var n int
	if err := json.Unmarshal(raw, &n); err != nil || n < 2 {
		return 0, fmt.Errorf("%s is %s, want an integer of 2 or more (a body without it is version 1)", VersionField, raw)
	}
	return n, nil
}

// Decode decodes the body of an entry of kind into a T. It refuses a kind
// this build does not know, a version of it this build does not read
// (naming both, so the reader knows to upgrade), and a T that is neither
// the registered type of that version nor a struct embedding it (a
// stage's own run.start, say), which would read the body as something it
// is not.
func Decode[T any](kind string, body []byte) (T, error) {
	var t T
	known := versions[kind]
	if known == nil {
		return t, fmt.Errorf("decode %s entry: this build of rlgate knows no entry kind %q", kind, kind)
	}
	v, err := BodyVersion(body)
	if err != nil {
		return t, fmt.Errorf("decode %s entry: %w", kind, err)
	}
	if !slices.Contains(known, v) {
		return t, fmt.Errorf("decode %s entry: its body is version %d of %s, which this build of rlgate does not read (it reads versions %v); read this ledger with a newer rlgate", kind, v, kind, known)
	}
	if err := fits(reflect.TypeFor[T](), kind, v); err != nil {
		return t, err
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return t, fmt.Errorf("decode %s entry: %w", kind, err)
	}
	return t, nil
}

// fits checks that ty reads version v of kind: it is the registered type,
// or a struct that embeds it (directly or through another embedded struct).
func fits(ty reflect.Type, kind string, v int) error {
	want, ok := Type(kind, v)
	if !ok {
		return fmt.Errorf("decode %s entry: no body type is registered for version %d; the package that owns %s must call records.Register", kind, v, kind)
	}
	if embeds(ty, want) {
		return nil
	}
	return fmt.Errorf("decode %s entry into %v: version %d's body is %v (or a struct embedding it)", kind, ty, v, want)
}

// embeds reports whether ty is want or a struct embedding it.
func embeds(ty, want reflect.Type) bool {
	if ty == want {
		return true
	}
	if ty.Kind() != reflect.Struct {
		return false
	}
	for i := range ty.NumField() {
		if f := ty.Field(i); f.Anonymous && embeds(f.Type, want) {
			return true
		}
	}
	return false
}
