package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/urfave/cli/v3"
)

// setUsageErrors makes every usage error of every command exit 2 with one
// line naming the flag, argument or subcommand: flag-parsing errors,
// arguments given to a command that takes none (no ArgsUsage), and an
// unknown subcommand of a command that only groups others (urfave/cli
// would print "No help topic" and exit 1).
func setUsageErrors(c *cli.Command) {
	c.OnUsageError = func(_ context.Context, cmd *cli.Command, err error, _ bool) error {
		return usageError{cliError(err), cmd.FullName()}
	}
	for _, sub := range c.Commands {
		switch action := sub.Action; {
		case action == nil && len(sub.Commands) > 0:
			sub.Action = func(_ context.Context, cmd *cli.Command) error {
				if !cmd.Args().Present() {
					return cli.ShowSubcommandHelp(cmd)
				}
				var names []string
				for _, s := range cmd.VisibleCommands() {
					names = append(names, s.Name)
				}
				return usageError{fmt.Sprintf("%s has no command %q; it has %s", commandPath(cmd), cmd.Args().First(),
					strings.Join(names, ", ")), cmd.FullName()}
			}
		case action != nil && sub.ArgsUsage == "":
			sub.Action = func(ctx context.Context, cmd *cli.Command) error {
				if cmd.Args().Present() {
					return usageError{fmt.Sprintf("%s takes no arguments, got %q", commandPath(cmd), cmd.Args().First()), cmd.FullName()}
				}
				return action(ctx, cmd)
			}
		}
		setUsageErrors(sub)
	}
}

// commandPath is cmd's name below rlgate ("ckpt diff"), as an error
// message after "rlgate: " names it.
func commandPath(cmd *cli.Command) string {
	return strings.TrimPrefix(cmd.FullName(), cmd.Root().Name+" ")
}

// urfave/cli's flag-parsing and help errors, which cliError rewords,
// compiled at the first error rather than at every start.
var (
	flagUnknownRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^flag provided but not defined: -+(.*)$`) })
	flagNoValueRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^flag needs an argument: -+(.*)$`) })
	flagBadValueRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^invalid value (".*") for flag -+([^:]*): (.*)$`) })
	flagRequiredRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Required flags? "(.*)" not set$`) })
	helpTopicRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^No help topic for '(.*)'`) })
)

// cliError rewords an error of urfave/cli as rlgate's other errors read,
// naming the flag as the user writes it and what it wants, without Go's
// parse functions ("strconv.ParseFloat: parsing ...").
func cliError(err error) string {
	msg := err.Error()
	if m := helpTopicRE().FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("no command %q", m[1])
	}
	if m := flagUnknownRE().FindStringSubmatch(msg); m != nil {
		return "unknown flag " + dashed(m[1])
	}
	if m := flagNoValueRE().FindStringSubmatch(msg); m != nil {
		return dashed(m[1]) + " needs a value"
	}
	if m := flagRequiredRE().FindStringSubmatch(msg); m != nil {
		names := strings.Split(m[1], ", ")
		for i, n := range names {
			names[i] = dashed(n)
		}
		if len(names) == 1 {
			return names[0] + " is required"
		}
		return strings.Join(names, ", ") + " are required"
	}
	if m := flagBadValueRE().FindStringSubmatch(msg); m != nil {
		why := m[3]
		switch {
		case strings.Contains(why, "value out of range"):
			why = "out of range"
		case strings.HasPrefix(why, "strconv.ParseFloat"):
			why = "want a number"
		case strings.HasPrefix(why, "strconv.ParseUint"):
			why = "want a whole number, 0 or more"
		case strings.HasPrefix(why, "strconv.ParseInt"):
			why = "want a whole number"
		case strings.HasPrefix(why, "strconv.ParseBool"), why == "parse error":
			why = "want true or false"
		case strings.HasPrefix(why, "time: "):
			why = "want a duration such as 90s, 15m or 2h"
		}
		return dashed(m[2]) + " " + m[1] + ": " + why
	}
	return msg
}

// dashed is a flag name as help shows it: -b, --alpha.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
