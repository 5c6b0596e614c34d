package refused

import "fmt"

type endpoint struct {
	host string
	port int
}

// FmtFieldNames formats a struct of the code's own with its fields'
// names: the interpreter names them Xhost and Xport.
func FmtFieldNames() string {
	e := endpoint{"db", 5432}
	return fmt.Sprintf("endpoint %+v", e) // sandbox: %+v of
}
