package httpapi

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// jsonDepthMax bounds the nesting of a JSON body, as encoding/json does.
const jsonDepthMax = 10000

// jsonScanner walks a JSON text in one pass without building values: it validates the
// grammar of RFC 8259 and hands out the byte spans of the values a caller asks for. It
// exists for the batch produce body (batchdecode.go), where encoding/json's several
// passes over every payload were half of the daemon's CPU.
type jsonScanner struct {
	b     []byte
	pos   int
	depth int
}

// span is a value's text: b[start:end]. For a string, plain reports that its inner bytes
// hold no escape and only ASCII, so they are its value.
type span struct {
	start, end int
	plain      bool
}

func (s *jsonScanner) fail(format string, args ...any) error {
	return badRequest("invalid JSON body: %s at byte %d", fmt.Sprintf(format, args...), s.pos)
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.b) {
		switch s.b[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (s *jsonScanner) peek() byte {
	s.skipSpace()
	if s.pos >= len(s.b) {
		return 0
	}
	return s.b[s.pos]
}

// expect consumes c (after white space) or fails.
func (s *jsonScanner) expect(c byte) error {
	if s.peek() != c {
		return s.fail("expected %q", c)
	}
	s.pos++
	return nil
}

// enter and leave count the nesting of objects and arrays.
func (s *jsonScanner) enter() error {
	s.depth++
	if s.depth > jsonDepthMax {
		return s.fail("nesting deeper than %d", jsonDepthMax)
	}
	return nil
}

func (s *jsonScanner) leave() { s.depth-- }

// str scans a string at pos (its opening quote) and returns its span, quotes included.
// Plain bytes are skipped eight at a time (base64 payloads are most of a batch body).
func (s *jsonScanner) str() (span, error) {
	if s.peek() != '"' {
		return span{}, s.fail("expected a string")
	}
	start, plain := s.pos, true
	b := s.b
	for s.pos++; s.pos < len(b); s.pos++ {
		for s.pos+8 <= len(b) && strSpecial[b[s.pos]]|strSpecial[b[s.pos+1]]|strSpecial[b[s.pos+2]]|
			strSpecial[b[s.pos+3]]|strSpecial[b[s.pos+4]]|strSpecial[b[s.pos+5]]|
			strSpecial[b[s.pos+6]]|strSpecial[b[s.pos+7]] == 0 {
			s.pos += 8
		}
		if s.pos >= len(b) {
			break
		}
		switch c := b[s.pos]; {
		case c == '"':
			s.pos++
			return span{start, s.pos, plain}, nil
		case c < 0x20:
			return span{}, s.fail("control character in a string")
		case c == '\\':
			plain = false
			if err := s.escape(); err != nil {
				return span{}, err
			}
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	return span{}, s.fail("unterminated string")
}

// strSpecial marks the bytes str must look at: the quote, the backslash, control
// characters and non-ASCII.
var strSpecial = func() (t [256]byte) {
	for c := range 256 {
		if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			t[c] = 1
		}
	}
	return t
}()

// escape checks the escape sequence whose backslash is at pos and leaves pos on its last
// byte.
func (s *jsonScanner) escape() error {
	if s.pos+1 >= len(s.b) {
		return s.fail("unterminated string")
	}
	s.pos++
	switch s.b[s.pos] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return nil
	case 'u':
		if s.pos+4 >= len(s.b) {
			return s.fail("unterminated string")
		}
		for i := 1; i <= 4; i++ {
			if !isHex(s.b[s.pos+i]) {
				return s.fail("invalid \\u escape")
			}
		}
		s.pos += 4
		return nil
	}
	return s.fail("invalid escape")
}

// value scans any JSON value and returns its span.
func (s *jsonScanner) value() (span, error) {
	switch c := s.peek(); {
	case c == '"':
		return s.str()
	case c == '{':
		return s.container(s.objectBody)
	case c == '[':
		return s.container(s.arrayBody)
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == 0:
		return span{}, s.fail("unexpected end")
	}
	return span{}, s.fail("unexpected %q", s.b[s.pos])
}

func (s *jsonScanner) container(body func() error) (span, error) {
	start := s.pos
	if err := s.enter(); err != nil {
		return span{}, err
	}
	s.pos++ // the opening brace or bracket
	if err := body(); err != nil {
		return span{}, err
	}
	s.leave()
	return span{start: start, end: s.pos}, nil
}

// objectBody scans an object's members after its '{', through its '}'.
func (s *jsonScanner) objectBody() error {
	return s.members(func(span) error {
		_, err := s.value()
		return err
	})
}

// members scans the members of an object whose '{' was consumed, through its '}',
// calling member with each name's span (quotes included) when pos is at its value,
// which member must consume.
func (s *jsonScanner) members(member func(name span) error) error {
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	for {
		name, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(name); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.fail("expected ',' or '}'")
		}
	}
}

// arrayBody scans an array's elements after its '[', through its ']'.
func (s *jsonScanner) arrayBody() error {
	return s.elements(func(int) error {
		_, err := s.value()
		return err
	})
}

// elements scans the elements of an array whose '[' was consumed, through its ']',
// calling element with each index when pos is at the element, which element consumes.
func (s *jsonScanner) elements(element func(i int) error) error {
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := element(i); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.fail("expected ',' or ']'")
		}
	}
}

// number scans -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScanner) number() (span, error) {
	start := s.pos
	if s.b[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.b) && s.b[s.pos] == '0':
		s.pos++
	case s.digits() == 0:
		return span{}, s.fail("invalid number")
	}
	if s.pos < len(s.b) && s.b[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return span{}, s.fail("invalid number")
		}
	}
	if s.pos < len(s.b) && (s.b[s.pos] == 'e' || s.b[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.b) && (s.b[s.pos] == '+' || s.b[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return span{}, s.fail("invalid number")
		}
	}
	return span{start: start, end: s.pos}, nil
}

func (s *jsonScanner) digits() int {
	n := 0
	for s.pos < len(s.b) && '0' <= s.b[s.pos] && s.b[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
}

func (s *jsonScanner) literal(word string) (span, error) {
	start := s.pos
	if len(s.b)-s.pos < len(word) || string(s.b[s.pos:s.pos+len(word)]) != word {
		return span{}, s.fail("invalid literal")
	}
	s.pos += len(word)
	return span{start: start, end: s.pos}, nil
}

// end checks that only white space follows the value.
func (s *jsonScanner) end() error {
	if s.peek() != 0 {
		return s.fail("data after the JSON value")
	}
	return nil
}

// text returns the bytes of sp.
func (s *jsonScanner) text(sp span) []byte { return s.b[sp.start:sp.end] }

// unquote returns the value of the string at sp (quotes included): its inner bytes when
// they are plain (no escape, only ASCII), else encoding/json's reading of it (escapes,
// and invalid UTF-8 as U+FFFD), so both decoders agree on every string.
func (s *jsonScanner) unquote(sp span) (string, error) {
	if sp.plain {
		return string(s.b[sp.start+1 : sp.end-1]), nil
	}
	var v string
	if err := json.Unmarshal(s.text(sp), &v); err != nil {
		return "", err
	}
	return v, nil
}
