package stream

import (
	"encoding/json"
	"fmt"
)

// CheckMessage applies ReadExport's rules to one encoded message of an
// export of namespace that follows a message with seq prev (0 for the
// first); a nil namespace takes the message's own (an export whose
// namespace is not known yet). It returns the message's seq. It is for readers that go through an export message by
// message instead of holding it whole, such as the lab's replay upload.
func CheckMessage(raw json.RawMessage, namespace *string, prev uint64) (uint64, error) {
	var m messageHead
	if err := json.Unmarshal(raw, &m); err != nil {
		return 0, fmt.Errorf("decoding json: %w", err)
	}
	ns := m.Object.Namespace
	if namespace != nil {
		ns = *namespace
	}
	return m.Seq, validateMessage(m, ns, prev)
}
