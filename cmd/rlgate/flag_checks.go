package main

import "github.com/urfave/cli/v3"

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
