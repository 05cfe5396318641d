package main

import (
	"math"

	"github.com/urfave/cli/v3"
)

// alphaFlag refuses an --alpha outside (0, 1) as a usage error naming the
// flag and the values it takes.
func alphaFlag(cmd *cli.Command) error {
	if a := cmd.Float("alpha"); !(a > 0 && a < 1) {
		return usagef("--alpha %g: want a significance level between 0 and 1, such as 0.05 for 95%% intervals", a)
	}
	return nil
}

// countFlag refuses an integer flag outside [lo, hi] as a usage error
// naming the flag and the range.
func countFlag(cmd *cli.Command, name string, lo, hi int) error {
	v := int(cmd.Int(name))
	switch {
	case v >= lo && v <= hi:
		return nil
	case hi == math.MaxInt:
		return usagef("--%s %d: want %d or more", name, v, lo)
	}
	return usagef("--%s %d: want %d to %d", name, v, lo, hi)
}

// checkFlags returns the first of the flag checks that failed.
func checkFlags(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ifSet sets *dst to flag name's value (read by get) when the flag was
// given, and leaves it alone otherwise: a policy's or a protocol's value
// stands unless the command line overrides it.
func ifSet[T any](cmd *cli.Command, name string, get func(string) T, dst *T) {
	if cmd.IsSet(name) {
		*dst = get(name)
	}
}

// pointerIfSet is flag name's value (read by get) when the flag was given,
// else nil: an override the workflow applies only where it is not nil.
func pointerIfSet[T any](cmd *cli.Command, name string, get func(string) T) *T {
	if !cmd.IsSet(name) {
		return nil
	}
	v := get(name)
	return &v
}
