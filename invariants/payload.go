package invariants

import (
	"strconv"
	"strings"
)

// The simulators' clients write each message's id at the head of its payload
// ("id:<n>:" then random bytes), so a record found in a log or delivered names the
// message it is.

// MessagePayload is the payload of message id: its id, then rest.
func MessagePayload(id uint64, rest []byte) []byte {
	return append([]byte("id:"+strconv.FormatUint(id, 10)+":"), rest...)
}

// MessageID reads the id a MessagePayload starts with.
func MessageID(p []byte) (uint64, bool) {
	s, ok := strings.CutPrefix(string(p[:min(len(p), 32)]), "id:")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(s, ":")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseUint(num, 10, 64)
	return id, err == nil
}
