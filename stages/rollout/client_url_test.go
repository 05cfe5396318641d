package rollout

import "testing"

func TestRouteURLs(t *testing.T) {
	for _, tc := range []struct{ endpoint, completions, models string }{
		{"http://h:8000", "http://h:8000/v1/chat/completions", "http://h:8000/v1/models"},
		{"http://h:8000/", "http://h:8000/v1/chat/completions", "http://h:8000/v1/models"},
		{"http://h:8000/v1", "http://h:8000/v1/chat/completions", "http://h:8000/v1/models"},
		{"http://h:8000/v1/", "http://h:8000/v1/chat/completions", "http://h:8000/v1/models"},
		{"http://h:8000/v1/chat/completions", "http://h:8000/v1/chat/completions", "http://h:8000/v1/models"},
		{"https://gw.example/openai/v1?api_key=K", "https://gw.example/openai/v1/chat/completions?api_key=K", "https://gw.example/openai/v1/models?api_key=K"},
		{"http://u:p@h/v1", "http://u:p@h/v1/chat/completions", "http://u:p@h/v1/models"},
	} {
		if got := completionsURL(tc.endpoint); got != tc.completions {
			t.Errorf("completionsURL(%q) = %q, want %q", tc.endpoint, got, tc.completions)
		}
		if got := modelsURL(tc.endpoint); got != tc.models {
			t.Errorf("modelsURL(%q) = %q, want %q", tc.endpoint, got, tc.models)
		}
	}
}
