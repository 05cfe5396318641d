package metrics

import (
	"errors"
	"testing"
)

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in   string
		want Format
		err  error
	}{
		{"verl", FormatVerl, nil},
		{":verl-console", FormatVerlConsole, nil},
		{":trl", FormatTRL, nil},
		{"tensorboard", FormatTensorBoard, nil},
		{":jsonl", FormatJSONL, nil},
		{"llamafactory", FormatLlamaFactory, nil},
		{":skyrl-console", FormatSkyRLConsole, nil},
		{"openrlhf-console", FormatOpenRLHFConsole, nil},
		{":auto", FormatAuto, nil},
		{"csv", "", ErrUnknownFormat},
		{"", "", ErrUnknownFormat},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseFormat(tt.in)
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("ParseFormat(%q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestParseSpec(t *testing.T) {
	tests := []struct {
		spec    string
		path    string
		format  Format
		wantErr bool
	}{
		{"out/log.jsonl:verl", "out/log.jsonl", FormatVerl, false},
		{"run.log:verl-console", "run.log", FormatVerlConsole, false},
		{"run.log:auto", "run.log", FormatAuto, false},
		{"out/log.jsonl", "out/log.jsonl", "", false},
		{"logs:old/x.jsonl", "logs:old/x.jsonl", "", false},
		{"out/log.jsonl:verll", "", "", true},
		{":verl", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			path, f, err := ParseSpec(tt.spec)
			if path != tt.path || f != tt.format || (err != nil) != tt.wantErr {
				t.Errorf("ParseSpec(%q) = %q, %q, %v; want %q, %q, error %v", tt.spec, path, f, err, tt.path, tt.format, tt.wantErr)
			}
		})
	}
}

func TestDetect(t *testing.T) {
	tb := appendRecord(nil, fileVersionEvent())
	tests := []struct {
		name    string
		file    string
		content string
		want    Format
	}{
		{"tensorboard by name", "events.out.tfevents.1700.host", "", FormatTensorBoard},
		{"tensorboard by content", "run.bin", string(tb), FormatTensorBoard},
		{"trl by name", "trainer_state.json", "", FormatTRL},
		{"trl by content", "state.json", "{\n  \"epoch\": 1,\n  \"log_history\": [\n", FormatTRL},
		{"verl file logger", "m.jsonl", `{"step": 0, "data": {"a": 1}}` + "\n", FormatVerl},
		{"generic jsonl", "m.jsonl", `{"step": 0, "loss": 1}` + "\n", FormatJSONL},
		{"verl console", "train.log", "Loading...\n(TaskRunner pid=3) step:0 - a:1\n", FormatVerlConsole},
		{"nothing telling", "train.log", "Loading...\n", ""},
		{"empty", "m.jsonl", "", ""},
		{"json without a step", "m.jsonl", `{"loss": 1}` + "\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Detect(writeTemp(t, tt.file, []byte(tt.content)))
			if got != tt.want || (tt.want == "") != errors.Is(err, ErrUnknownFormat) {
				t.Errorf("Detect = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestFormatTrainer(t *testing.T) {
	for _, f := range Formats {
		want := map[Format]Trainer{FormatVerl: TrainerVerl, FormatVerlConsole: TrainerVerl, FormatTRL: TrainerTRL,
			FormatLlamaFactory: TrainerLlamaFactory, FormatSkyRLConsole: TrainerSkyRL, FormatOpenRLHFConsole: TrainerOpenRLHF}[f]
		if got := f.Trainer(); got != want {
			t.Errorf("%s.Trainer() = %q, want %q", f, got, want)
		}
	}
}
