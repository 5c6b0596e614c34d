// Package layers holds no code, only the test that keeps oplab's packages
// in their floors. From the bottom up:
//
//	cluster/     the API server and etcd oplab runs (or the one it is given)
//	controller/  the Database operator, its trace (controller/trace), the
//	             lab namespaces (controller/labns), the learners' sandbox
//	lessons/     the course: lessons, challenges and their judge; and
//	quiz/        the quiz and the flashcards, on the same floor (the judge
//	             grades a challenge's questions with it; it links lessons)
//	web/         the pages, the websocket stream, sessions and the class
//	cmd/         the programs, which assemble the rest
//
// A package imports only from its own floor or the floors below: the web
// uses the domain, and nothing of the domain needs the web to build or to
// be tested.
package layers
