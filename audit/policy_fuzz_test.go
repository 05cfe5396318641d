package audit

import "testing"

// FuzzParsePolicy: a policy file is written by whoever hands it in, so
// ParsePolicy must never panic on one, and whatever it accepts must be a
// policy the gate can hold to: one that passes Check, has a digest, and
// reads back the same from its recorded text.
func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(PaperGradeSource()))
	f.Add([]byte("claims: [\"rl > base\"]\naudits: [gold]\nreproduced: [rl2, eval_rl]\n" + subjects))
	f.Add([]byte("name: x\nclaims: [\"rl > base on hard+extra\"]\noptions: {mutate: 20, mutate_endpoint: \"http://h/v1\"}\n"))
	f.Add([]byte("reproduced: [rl2, rl2]\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := ParsePolicy("p.yaml", raw)
		if err != nil {
			return
		}
		if err := p.Check(); err != nil {
			t.Fatalf("accepted a policy its own check refuses: %v\n%s", err, raw)
		}
		if _, err := p.Digest(); err != nil {
			t.Fatalf("accepted a policy without a digest: %v\n%s", err, raw)
		}
		again, err := ParsePolicy("p.yaml", raw)
		if err != nil || again.Held() != p.Held() {
			t.Fatalf("read twice, differently: %v\n%s", err, raw)
		}
	})
}
