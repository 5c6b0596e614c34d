package conformance

import (
	"fmt"
	"strconv"
	"strings"
)

// StringsRangeRunes ranges over a string: byte offsets and runes.
func StringsRangeRunes() string {
	var out []string
	for i, r := range "añ€x" {
		out = append(out, fmt.Sprint(i, ":", string(r)))
	}
	s := "añ€"
	return strings.Join(out, ",") + fmt.Sprint(" ", len(s), len([]rune(s)), s[1], string(s[0]))
}

// StringsBytesAndRunes converts between strings, bytes and runes.
func StringsBytesAndRunes() string {
	b := []byte("shop")
	b[0] = 'S'
	r := []rune("ñandú")
	r[0] = 'N'
	var sb strings.Builder
	for i := 0; i < 3; i++ {
		sb.WriteByte('a' + byte(i))
		sb.WriteRune('é')
	}
	return string(b) + " " + string(r) + " " + sb.String() + " " + string(rune(65)) + strconv.Quote("\x00")
}

// StringsHelpers uses strings and strconv as a reconciler does for names.
func StringsHelpers() string {
	name := "shop-db-0"
	base, ordinal, _ := strings.Cut(name[len("shop-"):], "-")
	n, err := strconv.Atoi(ordinal)
	parts := strings.Split("a,b,,c", ",")
	f := strings.Fields("  x  y ")
	return fmt.Sprint(base, " ", n+1, " ", err, " ", len(parts), " ", f, " ", strings.HasPrefix(name, "shop"),
		" ", strings.TrimSuffix(name, "-0"), " ", strconv.FormatInt(255, 16), " ", strings.Repeat("ab", 2))
}

// StringsCompareAndConcat compares and builds strings.
func StringsCompareAndConcat() string {
	a, b := "apple", "banana"
	s := ""
	for i := 0; i < 3; i++ {
		s += strconv.Itoa(i)
	}
	return fmt.Sprint(a < b, a == "apple", s, strings.Compare(b, a), strings.EqualFold("Go", "GO"))
}

type hostPort struct {
	host string
	port int
}

// StringsFormatVerbs formats values of the code's own types with verbs
// that print no names, and names with %+v only of the API's types.
func StringsFormatVerbs() string {
	hp := hostPort{"db", 5432}
	return fmt.Sprintf("%v|%d|%5.1f|%-4s|%q|%x|%+v|%*d|%%|%v", hp, hp.port, 2.25, "ab", "q", 255,
		struct{ N int }{1}, 3, 7, []hostPort{hp})
}
