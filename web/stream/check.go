package stream

// CheckMessage applies ReadExport's rules to one message of an export of
// namespace that follows a message with seq prev (0 for the first). It is
// for readers that go through an export message by message instead of
// holding it whole, such as the lab's replay upload.
func CheckMessage(m Message, namespace string, prev uint64) error {
	return validateMessage(m, namespace, prev)
}
