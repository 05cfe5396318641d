package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/urfave/cli/v3"
)

// malformedSkip are the commands the nonexistent-path case leaves out,
// each for a reason; every other case runs them all.
var malformedSkip = map[string]string{
	"demo": "runs the whole demo pipeline (about a minute): it takes no required path to make nonexistent",
}

// malformedExitOK are the commands that succeed on the nonexistent-path
// case: they create what they are given or read no path.
var malformedExitOK = map[string]string{
	"init":          "creates the ledger where --ledger points",
	"train init":    "writes a fresh checkpoint to --out",
	"stats mcnemar": "computes from its numbers alone",
	"stats wilson":  "computes from its numbers alone",
	"stats passk":   "computes from its numbers alone",
	"stats holm":    "computes from its numbers alone",
}

// actionRequired are flags that a command's action requires (one of
// several, or unless another is given) rather than urfave/cli, with the
// nonexistent path each gets under the command's missing directory (or,
// for labels, runs that do not exist).
var actionRequired = map[string][]string{
	"ledger copy": {"--from", "from"},
	"gate":        {"--runs", "base=no-such-run,rl=no-such-run-either"},
	"report":      {"--out", "out"},
}

// lookupFlags name runs or labels that already exist rather than ones the
// ledger will record, so a control character in them is not a usage
// error: nothing matches it.
var lookupFlags = map[string]bool{"log --run": true, "publish --run": true, "serve-replay --run": true, "metrics --run": true}

// nameFlags are the flags whose value the ledger records as a name.
var nameFlags = []string{"run", "stage", "name", "grade-run"}

// TestMalformedArguments runs every command (walking the command tree, so a
// new command is covered without a change here) with malformed arguments:
// an unknown flag, missing required flags and arguments, a bad value for
// each typed flag, an unknown subcommand, a control character in each
// name or label, and nonexistent paths. Each must print exactly one line on
// stderr, with no Go type, pointer, struct dump, stack or format error,
// exit 2 for usage and 1 for errors, and leave the ledger as it was.
func TestMalformedArguments(t *testing.T) {
	tmp := t.TempDir()
	dir := ledgerWithRuns(t, "sft=sft1")
	t.Setenv(ledger.EnvLedger, dir)
	before := ledgerState(t, dir)

	type tcase struct {
		name string
		args []string
		code int
		want string // in stderr
		// noLedger is where the nonexistent-path case must not leave a
		// ledger behind.
		noLedger string
	}
	var cases []tcase
	var walk func(c *cli.Command, path []string)
	walk = func(c *cli.Command, path []string) {
		for _, sub := range c.Commands {
			if sub.Name == "help" {
				continue
			}
			p := append(slices.Clone(path), sub.Name)
			full := strings.Join(p, " ")
			if len(sub.Commands) > 0 {
				cases = append(cases, tcase{full + " unknown subcommand", append(slices.Clone(p), "no-such-command"), exitUsage, `no command "no-such-command"`, ""},
					tcase{full + " help on an unknown subcommand", append(slices.Clone(p), "help", "no-such-command"), exitUsage, `no command "no-such-command"`, ""})
				walk(sub, p)
				continue
			}
			// Every command gets nonexistent paths of its own (init
			// creates its ledger there).
			missing := filepath.Join(tmp, "missing", strings.Join(p, "-"))
			required, typed := fill(sub, missing)
			cases = append(cases, tcase{full + " unknown flag", append(slices.Clone(p), "--no-such-flag"), exitUsage, "unknown flag --no-such-flag", ""})
			if len(required) > 0 {
				cases = append(cases, tcase{full + " no required flags", slices.Clone(p), exitUsage, " required", ""})
			}
			if extra := actionRequired[full]; extra != nil {
				cases = append(cases, tcase{full + " no " + extra[0], append(slices.Clone(p), required...), exitUsage, "", ""})
				value := extra[1]
				if !strings.Contains(value, "=") {
					value = filepath.Join(missing, value)
				}
				required = append(required, extra[0], value)
			}
			if needsArgs(sub) {
				cases = append(cases, tcase{full + " no arguments", append(slices.Clone(p), required...), exitUsage, "", ""})
			}
			for _, f := range typed {
				args := append(append(slices.Clone(p), required...), dashed(f)+"=not-a-value")
				cases = append(cases, tcase{full + " bad " + dashed(f), args, exitUsage, dashed(f) + ` "not-a-value": want `, ""})
			}
			for _, f := range sub.Flags {
				name := f.Names()[0]
				if _, ok := f.(*cli.StringFlag); !ok || (!slices.Contains(nameFlags, name) && name != "runs" && name != "train") {
					continue
				}
				value, want := "a\x1b]0;pwned\ab", "--"+name+` "a\x1b]0;pwned\ab": holds the non-printable character U+001B`
				if name == "runs" || name == "train" {
					value, want = "a\x1b[2J=sft1,b=sft1", `--`+name+`: label "a\x1b[2J" holds the non-printable character U+001B`
				}
				args := append(without(required, name), dashed(name), value)
				if needsArgs(sub) {
					args = append(args, requiredArgs(sub, missing)...)
				}
				tc := tcase{full + " control character in --" + name, append(slices.Clone(p), args...), exitUsage, want, ""}
				if lookupFlags[full+" --"+name] {
					tc.code, tc.want = exitOKOrError, "" // nothing matches it
				}
				cases = append(cases, tc)
			}
			if _, skip := malformedSkip[full]; !skip {
				args := append([]string{"--ledger", missing}, p...)
				args = append(append(args, required...), requiredArgs(sub, missing)...)
				tc := tcase{name: full + " nonexistent paths", args: args, code: exitError, noLedger: missing}
				switch {
				case full == "init":
					tc.code, tc.noLedger = exitOK, ""
				case malformedExitOK[full] != "":
					tc.code = exitOK
				case len(required) > 0 || needsArgs(sub):
					// A command may check a path as part of its command
					// line (a usage error) or when it opens it (an error).
					tc.code = exitUsageOrError
				}
				cases = append(cases, tc)
			}
		}
	}
	walk(newApp(nil, nil), nil)
	cases = append(cases, tcase{"unknown command", []string{"no-such-command"}, exitUsage, `no command "no-such-command"`, ""},
		tcase{"help on an unknown command", []string{"help", "no-such-command"}, exitUsage, `no command "no-such-command"`, ""},
		// Names inside other flags' values.
		tcase{"run control character in an --in name", []string{"run", "--stage", "sft", "--in", "a\x1b[2J=x", "--", "true"}, exitUsage,
			`--in: name "a\x1b[2J" holds the non-printable character U+001B`, ""},
		tcase{"run control character in an --out name", []string{"run", "--stage", "sft", "--out", "ckpt\a=x", "--", "true"}, exitUsage,
			`--out: name "ckpt\a" holds the non-printable character U+0007`, ""})

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := rlgate(t, tc.args...)
			if tc.code >= 0 && code != tc.code || tc.code == exitOKOrError && code != exitOK && code != exitError ||
				tc.code == exitUsageOrError && code != exitUsage && code != exitError {
				t.Errorf("%q: exit %d, want %d; stderr %q", tc.args, code, tc.code, errOut)
			}
			if diff := cmp.Diff(before, ledgerState(t, dir)); diff != "" {
				t.Fatalf("%q changed the ledger (-before +after):\n%s", tc.args, diff)
			}
			if _, err := os.Stat(filepath.Join(tc.noLedger, "ledger.db")); tc.noLedger != "" && !os.IsNotExist(err) {
				t.Errorf("%q left a ledger in %s", tc.args, tc.noLedger)
			}
			if code == exitOK {
				return
			}
			if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "rlgate: ") {
				t.Errorf("%q: stderr is not one line: %q", tc.args, errOut)
			}
			if code == exitUsage && out != "" {
				t.Errorf("%q: a usage error printed on stdout: %q", tc.args, out)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("%q: stderr %q, want it to say %q", tc.args, errOut, tc.want)
			}
			for _, bad := range []string{"*", "&{", "goroutine", "0x", "%!", "panic", "strconv.", "<nil>", "map[", "\x1b", "\a"} {
				if strings.Contains(errOut, bad) {
					t.Errorf("%q: stderr holds %q: %q", tc.args, bad, errOut)
				}
			}
		})
	}
}

// Expected exit codes of TestMalformedArguments that allow two.
const (
	exitOKOrError    = -1
	exitUsageOrError = -2
)

// fill returns cmd's required flags, each with a value of its type (a
// nonexistent path under missing for a string), and the names of its
// flags that take a typed value (numbers, durations, booleans).
func fill(cmd *cli.Command, missing string) (required []string, typed []string) {
	for _, f := range cmd.Flags {
		name := f.Names()[0]
		value := ""
		switch f.(type) {
		case *cli.StringFlag, *cli.StringSliceFlag:
			value = filepath.Join(missing, name)
		case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
			value = "1"
			typed = append(typed, name)
		case *cli.FloatFlag:
			value = "0.5"
			typed = append(typed, name)
		case *cli.DurationFlag:
			value = "1s"
			typed = append(typed, name)
		case *cli.BoolFlag:
			typed = append(typed, name)
		}
		if rf, ok := f.(cli.RequiredFlag); ok && rf.IsRequired() {
			required = append(required, dashed(name), value)
		}
	}
	return required, typed
}

// without is the flag-value pairs of required but flag name's.
func without(required []string, name string) []string {
	var out []string
	for i := 0; i+1 < len(required); i += 2 {
		if required[i] != dashed(name) {
			out = append(out, required[i], required[i+1])
		}
	}
	return out
}

// needsArgs says whether cmd's arguments are required: its ArgsUsage
// names some outside brackets.
func needsArgs(cmd *cli.Command) bool {
	return cmd.ArgsUsage != "" && !strings.HasPrefix(cmd.ArgsUsage, "[")
}

// requiredArgs are nonexistent paths for each argument cmd requires
// ("-- CMD" gets a nonexistent program).
func requiredArgs(cmd *cli.Command, missing string) []string {
	if !needsArgs(cmd) {
		return nil
	}
	var out []string
	for _, a := range strings.Fields(cmd.ArgsUsage) {
		switch {
		case a == "--":
			out = append(out, "--")
		case a == "SEQ|HASH":
			out = append(out, "1")
		case a == "P...":
			out = append(out, "0.5")
		case strings.HasPrefix(a, "["):
		default:
			out = append(out, filepath.Join(missing, strings.ToLower(strings.Trim(a, ".|"))))
		}
	}
	return out
}

// ledgerState is what a malformed command must leave as it was: the head
// and every file of the ledger directory but SQLite's WAL and shared
// memory, which any reader may touch.
func ledgerState(t *testing.T, dir string) map[string]string {
	t.Helper()
	state := map[string]string{"head": headOf(t, dir).String()}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, "-wal") || strings.HasSuffix(p, "-shm") || strings.HasSuffix(p, ".db") {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		state[rel] = "file"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// TestReportCompareErrorNamesTheTable: a report whose runs cannot be
// compared says which table failed, without the doubled space of an empty
// group value ("report all : compare: ...").
func TestReportCompareErrorNamesTheTable(t *testing.T) {
	t.Parallel()
	dir := ledgerWithRuns(t, "sft=sft1", "rl=rl1")
	code, _, errOut := rlgate(t, "--ledger", dir, "report", "--out", filepath.Join(t.TempDir(), "report"), "--runs", "base=sft1,rl=rl1")
	want := "rlgate: report table all: compare: run sft1 (base) has no graded outcomes. Try: rlgate log --run sft1\n"
	if code != exitError || errOut != want {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
	}
}

// ledgerWithRuns is a new ledger holding a run of `true` for each
// STAGE=RUN given, recorded by rlgate run.
func ledgerWithRuns(t *testing.T, stageRuns ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ledger")
	if code, _, errOut := rlgate(t, "--ledger", dir, "init"); code != exitOK {
		t.Fatal(errOut)
	}
	for _, sr := range stageRuns {
		stage, run, _ := strings.Cut(sr, "=")
		if code, _, errOut := rlgate(t, "--ledger", dir, "run", "--stage", stage, "--run", run, "--gpu", "off", "--", "true"); code != exitOK {
			t.Fatal(errOut)
		}
	}
	return dir
}

// TestOneLine: an error of several lines (pgx reports each address it
// tried) is printed as one, and a control character in it, as a run id
// read from a ledger may hold, is escaped.
func TestOneLine(t *testing.T) {
	t.Parallel()
	in := "failed to connect:\n\t127.0.0.1:5432: tls error\n\t127.0.0.1:5432: run \"a\x1b[2J\" refused\n"
	want := `failed to connect: 127.0.0.1:5432: tls error; 127.0.0.1:5432: run "a\x1b[2J" refused`
	if got := oneLine(in); got != want {
		t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
	}
}
