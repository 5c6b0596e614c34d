package trace

import "encoding/json"

// CheckMessage applies ReadExport's rules to one encoded message of an
// export of namespace that follows a message with seq prev (0 for the
// first); a nil namespace takes the message's own (an export whose
// namespace is not known yet). It returns the message's seq. It is for
// readers that go through an export message by message instead of holding
// it whole, such as the lab's replay upload. The message is decoded
// strictly (DecodeStrict): an unknown key, a key in another case than its
// field's or a key given twice is refused, named.
func CheckMessage(raw json.RawMessage, namespace *string, prev uint64) (uint64, error) {
	// The whole message is decoded strictly, not only the fields checked
	// here: the page reads every field of it.
	var full Message
	if err := DecodeStrict(raw, &full); err != nil {
		return 0, err
	}
	m := messageHead{Seq: full.Seq, Time: full.Time, Type: full.Type, Object: full.Object}
	ns := m.Object.Namespace
	if namespace != nil {
		ns = *namespace
	}
	return m.Seq, validateMessage(m, ns, prev)
}
