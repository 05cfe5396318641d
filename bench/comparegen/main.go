// Command comparegen writes four evaluation runs of N tasks (default 1534,
// the size of BIRD dev) into a ledger, for timing `rlgate compare`.
//
//	go run ./bench/comparegen -ledger DIR [-tasks 1534]
package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"log"

	"github.com/rlgate/rlgate/ledger"
)

func main() {
	dir := flag.String("ledger", "", "ledger directory to create")
	n := flag.Int("tasks", 1534, "tasks per run")
	flag.Parse()
	ctx := context.Background()
	l, err := ledger.Init(ctx, *dir)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	// Accuracy rises from run to run, with every run getting a different
	// subset right, so the comparisons have discordant pairs both ways.
	for k, run := range []string{"base", "sft", "rl", "noupdate"} {
		var o ledger.Outcomes
		for i := range *n {
			o.Items = append(o.Items, ledger.Outcome{TaskID: fmt.Sprintf("bird-%04d", i), Correct: (i*7+k*13)%10 < 4+k})
		}
		if _, err := l.Append(ctx, ledger.Record{Kind: records.KindOutcomes, Run: run, Body: o}); err != nil {
			log.Fatal(err)
		}
	}
}
