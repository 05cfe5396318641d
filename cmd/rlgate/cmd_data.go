package main

import (
	"context"
	"io"
	"slices"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/workflow/data"
	"github.com/urfave/cli/v3"
)

func newDataCommand() *cli.Command {
	out := &cli.StringFlag{Name: "out", Required: true, Usage: "`DIR` to write tasks.jsonl, gold.jsonl and manifest.json to"}
	name := &cli.StringFlag{Name: "name", Validator: ledger.CheckName, Usage: "dataset `NAME`, the prefix of task ids (default: the benchmark's name)"}
	dbRoot := &cli.StringFlag{Name: "db-root", Required: true, Usage: "`DIR` holding <db_id>/<db_id>.sqlite"}
	force := &cli.BoolFlag{Name: "force", Usage: "import into a --out that is not empty, replacing tasks.jsonl, gold.jsonl and manifest.json there and nothing else"}
	importHelp := "Writes the public tasks (id, position, db_id, question, evidence, a schema\n" +
		"rendered from the database) and the gold (id, SQL, difficulty: BIRD's own;\n" +
		"for Spider and its variants the official hardness, easy/medium/hard/extra,\n" +
		"computed from the gold SQL as evaluation.py does, or \"unparsed\") to separate\n" +
		"files with both digests in manifest.json, and records a dataset entry.\n" +
		"Questions whose database is missing are listed and skipped. A --out that\n" +
		"already holds anything (an earlier import) is refused unless --force.\n" +
		"Every input is checked: a truncated or mis-shaped file, invalid UTF-8, a NUL\n" +
		"byte, a repeated id or a gold file that does not align with the questions is\n" +
		"an error naming the file and line or item.\n\n" + exitCodesHelp
	action := func(kind string) cli.ActionFunc {
		return func(ctx context.Context, cmd *cli.Command) error {
			s, err := data.Import(ctx, ledgerDir(cmd), data.ImportOptions{Kind: kind, Out: cmd.String("out"), Name: cmd.String("name"), DBRoot: cmd.String("db-root"),
				Dev: cmd.String("dev"), Gold: cmd.String("gold"), Tables: cmd.String("tables"), Parquet: cmd.String("parquet"), Force: cmd.Bool("force")})
			if err != nil {
				return err
			}
			return emit(cmd, s, func(w io.Writer) error { return data.WriteImported(w, s, cmd.String("db-root")) })
		}
	}
	return &cli.Command{
		Name:        "data",
		Usage:       "import benchmarks into public tasks and gold",
		Description: "Benchmarks are split into what a policy may see and what only grading reads.\n\n" + exitCodesHelp,
		Commands: []*cli.Command{{
			Name:        "import",
			Usage:       "import Spider, BIRD, SkyRL parquet or a Spider variant (Spider-DK, Spider-Realistic, Spider-Syn)",
			Description: importHelp,
			Commands: append([]*cli.Command{
				{Name: "spider", Usage: "import Spider (dev.json, dev_gold.sql, tables.json, database/)", Description: importHelp,
					Flags: []cli.Flag{jsonFlag(), out, force, name, dbRoot,
						&cli.StringFlag{Name: "dev", Required: true, Usage: "`dev.json`"},
						&cli.StringFlag{Name: "gold", Required: true, Usage: "`dev_gold.sql` (SQL<TAB>db_id per line)"},
						&cli.StringFlag{Name: "tables", Usage: "`tables.json` (hashed as a source)"}},
					Action: action("spider")},
				{Name: "bird", Usage: "import BIRD dev or mini-dev (dev.json / mini_dev_sqlite.json, dev_databases/)", Description: importHelp,
					Flags: []cli.Flag{jsonFlag(), out, force, name, dbRoot,
						&cli.StringFlag{Name: "dev", Required: true, Usage: "`dev.json` or mini_dev_sqlite.json"}},
					Action: action("bird")},
				{Name: "skyrl", Usage: "import a SkyRL text2sql parquet file", Description: importHelp,
					Flags: []cli.Flag{jsonFlag(), out, force, name, dbRoot,
						&cli.StringFlag{Name: "parquet", Required: true, Usage: "`FILE`.parquet with prompt, db_id, data, reward_spec"}},
					Action: action("skyrl")},
			}, variantCommands(importHelp, action, out, force, name, dbRoot)...),
		}, newDataRenderCommand()},
	}
}

// variantCommands builds one import command per Spider variant: the same
// flags as spider, without --gold (each record carries its query).
func variantCommands(help string, action func(kind string) cli.ActionFunc, flags ...cli.Flag) []*cli.Command {
	usage := map[dataset.SpiderVariant]string{
		dataset.SpiderDK:        "import Spider-DK (Spider-DK.json, its tables.json; --db-root: Spider's database/ merged with Spider-DK's)",
		dataset.SpiderRealistic: "import Spider-Realistic (spider-realistic.json on Spider's database/)",
		dataset.SpiderSyn:       "import Spider-Syn (dev.json on Spider's database/; the question is SpiderSynQuestion)",
	}
	var cmds []*cli.Command
	for _, v := range dataset.SpiderVariants {
		cmds = append(cmds, &cli.Command{Name: string(v), Usage: usage[v], Description: help,
			Flags: slices.Concat([]cli.Flag{jsonFlag()}, flags, []cli.Flag{
				&cli.StringFlag{Name: "dev", Required: true, Usage: "the question `FILE` (gold SQL in each record's query)"},
				&cli.StringFlag{Name: "tables", Usage: "`tables.json` (hashed as a source)"}}),
			Action: action(string(v))})
	}
	return cmds
}
