package metrics

// stepRecord walks one JSON object that holds a step under stepKey, adding
// its values to a record begun in sk; the caller commits or drops it. With
// dataKey empty every other member is a value (generic JSONL, a TRL
// log_history entry); with dataKey set only the leaves under that member are
// (veRL's file logger writes {"step": N, "data": {…}}) and other members are
// passed over.
func (s *jsonScanner) stepRecord(sk *sink, stepKey, dataKey string) (int64, error) {
	sk.begin()
	var step int64
	hasStep := false
	err := s.object(func(key []byte) error {
		switch {
		case string(key) == stepKey:
			var err error
			step, err = s.integer()
			hasStep = err == nil
			return err
		case dataKey == "":
			return s.leaf(sk, nil, key, 0)
		case string(key) == dataKey:
			return s.leaves(sk, nil, 0)
		default:
			return s.skip(0)
		}
	})
	if err == nil && !hasStep {
		err = ErrNoStep
	}
	return step, err
}

// jsonlDecoder reads one record per line: veRL's file logger or generic
// JSONL. Blank lines are ignored.
type jsonlDecoder struct {
	scan    jsonScanner
	stepKey string
	dataKey string
}

func (d *jsonlDecoder) line(sk *sink, b []byte, _ Cursor) error {
	d.scan.reset(b)
	if d.scan.peek() == 0 {
		sk.stats.Ignored++
		return nil
	}
	step, err := d.scan.stepRecord(sk, d.stepKey, d.dataKey)
	if err == nil {
		err = d.scan.expectEnd()
	}
	if err != nil {
		sk.drop()
		return err
	}
	sk.commit(step)
	return nil
}

// A JSONL record never spans lines, so nothing is ever pending.
func (d *jsonlDecoder) pending() (Cursor, bool) { return Cursor{}, false }
func (d *jsonlDecoder) flush(*sink)             {}
func (d *jsonlDecoder) drop(*sink)              {}
