package httpapi

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/narad/narad/core/node"
	"pgregory.net/rapid"
)

func TestDecodeBatchBodyCases(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cases := []struct {
		body string
		want string // rendered messages, or "error: <substring>"
	}{
		{`{"messages":[{"payload":"hi"}]}`, `["\"hi\""]`},
		{` {"messages" : [ {"payload" : {"a" : [1, 2.5e3, null]} } ] } `, `["{\"a\" : [1, 2.5e3, null]}"]`},
		{`{"messages":[{"payload":"` + b64("raw") + `","payload_encoding":"base64"}]}`, `["raw"]`},
		{`{"messages":[{"payload":"cmF3\/","payload_encoding":"base64"}]}`, `error: invalid base64`},
		{`{"messages":[{"payload":1,"key":"k\u00e9","partition":2},{"payload":2,"key":"` + b64("kb") + `","key_encoding":"base64"}]}`, `["1" key="ké" p=2 "2" key="kb"]`},
		{`{"messages":[{"payload":null}]}`, `["null"]`},
		{`{"messages":[{"payload":1,"key":null,"partition":null,"payload_encoding":null}]}`, `["1"]`},
		{``, `error: empty body`},
		{`   `, `error: empty body`},
		{`null`, `error: messages: 1 to`},
		{`{"messages":[]}`, `error: messages: 1 to`},
		{`{"messages":null}`, `error: messages: 1 to`},
		{`{"messages":[{"payload":1}]} x`, `error: data after the JSON value`},
		{`{"messages":[{"payload":1,"extra":2}]}`, `error: unknown field "extra"`},
		{`{"messages":[{"payload":1}],"other":2}`, `error: unknown field "other"`},
		{`{"messages":[{"payload":1,"payload":2}]}`, `error: given twice`},
		{`{"messages":[{"key":"a"}]}`, `error: message 0: payload is required`},
		{`{"messages":[{"payload":1},{"payload":1,"partition":-1}]}`, `error: message 1: partition must be a non-negative integer`},
		{`{"messages":[{"payload":1,"partition":1.0}]}`, `error: partition must be a non-negative integer`},
		{`{"messages":[{"payload":1,"key_encoding":"base64"}]}`, `error: key_encoding without a key`},
		{`{"messages":[{"payload":1,"payload_encoding":"hex"}]}`, `error: payload_encoding must be`},
		{`{"messages":[{"payload":"","payload_encoding":"base64"}]}`, `error: payload must be 1 byte to 1 MiB`},
		{`{"messages":[{"payload":5,"payload_encoding":"base64"}]}`, `error: must be a JSON string`},
		{`{"messages":[{"payload":1,"key":"` + strings.Repeat("k", keyBytesMax+1) + `"}]}`, `error: key`},
		{`{"messages":[{"payload":01}]}`, `error: invalid JSON body`},
		{`{"messages":[{"payload":"a` + "\x01" + `"}]}`, `error: invalid JSON body: control character`},
		{`{"messages":[{"payload":"\x"}]}`, `error: invalid JSON body: invalid escape`},
		{`{"messages":[{"payload":[1,]}]}`, `error: invalid JSON body`},
		{`{"messages":[null]}`, `error: message 0: must be an object`},
		{`{"messages":[{"payload":` + strings.Repeat("[", jsonDepthMax) + strings.Repeat("]", jsonDepthMax) + `}]}`, `error: invalid JSON body: nesting deeper`},
	}
	for _, c := range cases {
		msgs, _, err := decodeBatchBody([]byte(c.body))
		got := renderMessages(msgs)
		if err != nil {
			got = "error: " + err.Error()
			if !status400(err) {
				t.Errorf("%.60s: not a 400: %v", c.body, err)
			}
		}
		wantErr, isErr := strings.CutPrefix(c.want, "error: ")
		if isErr && (err == nil || !strings.Contains(err.Error(), wantErr)) || !isErr && got != c.want {
			t.Errorf("%.60s:\n got %s\nwant %s", c.body, got, c.want)
		}
	}
}

func TestDecodeBatchBodyCountLimit(t *testing.T) {
	body := `{"messages":[` + strings.Repeat(`{"payload":1},`, produceBatchMax) + `{"payload":1}]}`
	if _, _, err := decodeBatchBody([]byte(body)); err == nil || !strings.Contains(err.Error(), "messages: 1 to") {
		t.Fatalf("%d messages: %v", produceBatchMax+1, err)
	}
	body = `{"messages":[` + strings.Repeat(`{"payload":1},`, produceBatchMax-1) + `{"payload":1}]}`
	if msgs, _, err := decodeBatchBody([]byte(body)); err != nil || len(msgs) != produceBatchMax {
		t.Fatalf("%d messages: %d %v", produceBatchMax, len(msgs), err)
	}
}

func status400(err error) bool {
	status, _ := statusOf(err)
	return status == http.StatusBadRequest
}

func renderMessages(msgs []node.ProduceMessage) string {
	parts := make([]string, len(msgs))
	for i, m := range msgs {
		parts[i] = fmt.Sprintf("%q", m.Payload)
		if m.HasKey {
			parts[i] += fmt.Sprintf(" key=%q", m.Key)
		}
		if m.Partition >= 0 {
			parts[i] += fmt.Sprintf(" p=%d", m.Partition)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// checkAgainstReference holds decodeBatchBody to the encoding/json decoder it replaced:
// whatever it accepts, the reference accepts with the same messages; with exact, unique
// field names (strict) it also refuses only what the reference refuses.
func checkAgainstReference(t interface{ Fatalf(string, ...any) }, body []byte, strict bool) {
	got, total, err := decodeBatchBody(body)
	want, refErr := refDecodeBatch(body)
	switch {
	case err == nil && refErr != nil:
		t.Fatalf("accepted what the reference refuses (%v): %q", refErr, body)
	case err != nil && refErr == nil && strict:
		t.Fatalf("refused what the reference accepts (%v): %q", err, body)
	case err != nil:
		if !status400(err) {
			t.Fatalf("not a 400 for %q: %v", body, err)
		}
		return
	case err == nil && refErr == nil:
		if g, w := renderMessages(got), renderMessages(want); g != w {
			t.Fatalf("decoded differently:\n got %s\nwant %s\nbody %q", g, w, body)
		}
		n := 0
		for _, m := range got {
			n += len(m.Payload)
		}
		if n != total {
			t.Fatalf("total %d, payloads hold %d", total, n)
		}
	}
}

func TestDecodeBatchBodyMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		body := genBatchBody(t)
		checkAgainstReference(t, body, true)
		if rapid.Bool().Draw(t, "mutate") { // syntax damage: the one-way check holds
			mutated := mutateBytes(t, body)
			checkAgainstReference(t, mutated, false)
		}
	})
}

func mutateBytes(t *rapid.T, b []byte) []byte {
	b = bytes.Clone(b)
	for range rapid.IntRange(1, 3).Draw(t, "mutations") {
		if len(b) == 0 {
			return b
		}
		i := rapid.IntRange(0, len(b)-1).Draw(t, "at")
		switch rapid.IntRange(0, 2).Draw(t, "how") {
		case 0:
			b[i] = rapid.SampledFrom([]byte(`{}[]",:\ 0-.eatnu"x`)).Draw(t, "byte")
		case 1:
			b = append(b[:i], b[i+1:]...)
		case 2:
			b = append(b[:i], append([]byte{rapid.Byte().Draw(t, "ins")}, b[i:]...)...)
		}
	}
	return b
}

// genBatchBody draws a batch body with exact, unique field names: valid and invalid
// messages, white space, escapes, every field type.
func genBatchBody(t *rapid.T) []byte {
	ws := func() string { return rapid.SampledFrom([]string{"", "", " ", "\n\t", "  "}).Draw(t, "ws") }
	n := rapid.IntRange(0, 4).Draw(t, "messages")
	msgs := make([]string, n)
	for i := range msgs {
		var fields []string
		for _, name := range rapid.Permutation([]string{"payload", "payload_encoding", "key", "key_encoding", "partition"}).Draw(t, "order") {
			if v, ok := genField(t, name); ok {
				fields = append(fields, ws()+`"`+name+`"`+ws()+":"+ws()+v+ws())
			}
		}
		msgs[i] = ws() + "{" + strings.Join(fields, ",") + "}" + ws()
	}
	return []byte(ws() + `{` + ws() + `"messages"` + ws() + `:` + ws() + `[` + strings.Join(msgs, ",") + `]` + ws() + `}` + ws())
}

func genField(t *rapid.T, name string) (string, bool) {
	if rapid.IntRange(0, 3).Draw(t, name+"?") == 0 {
		return "", false
	}
	switch name {
	case "payload":
		if rapid.Bool().Draw(t, "b64") {
			raw := rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "raw")
			return rapid.SampledFrom([]string{
				`"` + base64.StdEncoding.EncodeToString(raw) + `"`,
				`"` + strings.ReplaceAll(base64.StdEncoding.EncodeToString(raw), "/", `\/`) + `"`,
				`"` + base64.RawStdEncoding.EncodeToString(raw) + `"`,
				`"not base64!"`, `null`, `17`,
			}).Draw(t, "b64payload"), true
		}
		return genJSONValue(t, 0), true
	case "payload_encoding", "key_encoding":
		return rapid.SampledFrom([]string{`"base64"`, `""`, `null`, `"hex"`, `5`, `"b\u0061se64"`}).Draw(t, name), true
	case "key":
		return rapid.SampledFrom([]string{`"k"`, `""`, `null`, `"a\"b\\c\u00e9\ud800"`, `"` + "\xff\xfe" + `"`,
			`"` + base64.StdEncoding.EncodeToString([]byte("key")) + `"`, `[]`, `"` + strings.Repeat("x", keyBytesMax+1) + `"`}).Draw(t, "key"), true
	default:
		return rapid.SampledFrom([]string{`0`, `3`, `-1`, `-0`, `1.5`, `1e2`, `"2"`, `null`, `99999999999999999999`, `true`}).Draw(t, "partition"), true
	}
}

// genJSONValue draws the text of a valid JSON value.
func genJSONValue(t *rapid.T, depth int) string {
	kind := rapid.IntRange(0, 6).Draw(t, "kind")
	if depth > 2 {
		kind %= 5
	}
	switch kind {
	case 0:
		return rapid.SampledFrom([]string{`0`, `-12`, `3.25`, `1e-7`, `-0.5E+3`, `123456789012345678901234567890`}).Draw(t, "num")
	case 1:
		return rapid.SampledFrom([]string{`""`, `"plain"`, `"esc\n\t\"\\\/"`, `"\u0000\uffff"`, `"héllo"`, `"` + "\xc3" + `"`}).Draw(t, "str")
	case 2:
		return rapid.SampledFrom([]string{`true`, `false`}).Draw(t, "bool")
	case 3:
		return `null`
	case 4:
		return `"` + rapid.StringMatching(`[a-z ]{0,20}`).Draw(t, "text") + `"`
	case 5:
		n := rapid.IntRange(0, 3).Draw(t, "len")
		parts := make([]string, n)
		for i := range parts {
			parts[i] = genJSONValue(t, depth+1)
		}
		return "[" + strings.Join(parts, " , ") + "]"
	default:
		n := rapid.IntRange(0, 3).Draw(t, "len")
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`"f%d" : %s`, i, genJSONValue(t, depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
}

// FuzzDecodeBatchBody: the decoder never panics, answers every refusal with a 400, and
// accepts nothing the encoding/json reference would refuse or read differently.
func FuzzDecodeBatchBody(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"payload":"hi","key":"k","partition":1}]}`,
		`{"messages":[{"payload":"aGk=","payload_encoding":"base64","key":"aw==","key_encoding":"base64"}]}`,
		`{"messages":[{"payload":{"a":[1,2,{"b":null}]}},{"payload":-1.5e3}]}`,
		`{"messages":[{"payload":"\u00e9\/"}]}`,
		`null`, ``, `{"messages":[]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAgainstReference(t, body, false)
	})
}

func BenchmarkDecodeBatchBody(b *testing.B) {
	payload := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("x"), 256))
	body := []byte(`{"messages":[` + strings.Repeat(`{"payload":"`+payload+`","payload_encoding":"base64"},`, 99) +
		`{"payload":"` + payload + `","payload_encoding":"base64"}]}`)
	b.Run("scanner", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, _, err := decodeBatchBody(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := refDecodeBatch(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
