package main

import (
	"runtime/debug"
	"strings"
)

// buildVersion is what rlgate --version prints after "rlgate version": the
// module version the binary was built at ("(devel)" for a build from a
// checkout), and the VCS revision, with "dirty" when the checkout had
// uncommitted changes, where the build recorded them. A ledger's run.start
// records the code version of a stage; this is the version of rlgate itself.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (built without module support)"
	}
	return formatVersion(bi)
}

func formatVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	parts := []string{v}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		parts = append(parts, settings["vcs"]+" "+rev)
		if settings["vcs.modified"] == "true" {
			parts = append(parts, "dirty")
		}
	}
	return strings.Join(append(parts, bi.GoVersion), ", ")
}
