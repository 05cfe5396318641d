package main

import (
	"io"

	"github.com/rlgate/rlgate/workflow/textout"
	"github.com/urfave/cli/v3"
)

// jsonFlag is the --json flag every reporting command takes. Its output is
// a contract: fields are only ever added. It is made afresh for each
// command: a cli flag holds its parse state, so one flag value shared by
// the commands of two CLI runs at once (tests run them in parallel in one
// process) would race.
func jsonFlag() cli.Flag { return &cli.BoolFlag{Name: "json", Usage: "print the result as JSON"} }

// emit prints a command's result on its standard output: as indented JSON
// with --json, else through text (textout.Emit).
func emit(cmd *cli.Command, summary any, text func(io.Writer) error) error {
	return emitChecked(cmd.Root().Writer, cmd.Bool("json"), summary, text, "")
}

// emitChecked prints a checking command's result (textout.Emit) and then,
// when failure names a failed check (the result's Failure), returns it as
// checkFailed: rlgate exits 3 with the result already out.
func emitChecked(w io.Writer, asJSON bool, result any, text func(io.Writer) error, failure string) error {
	if err := textout.Emit(w, asJSON, result, text); err != nil {
		return err
	}
	if failure != "" {
		return checkFailed{failure}
	}
	return nil
}
