package learn

import (
	"net/http"

	"github.com/oplab-dev/oplab/quiz"
	"github.com/oplab-dev/oplab/web/httpx"
)

// answerLimit bounds POST /quiz/answer: a question ID and a few indexes.
const answerLimit = 4 << 10

// answerRequest is the body of POST /quiz/answer.
type answerRequest struct {
	Question string `json:"question"`
	// Choices are the indexes picked, from 0.
	Choices []int `json:"choices"`
	// Attempt is the quiz visit's choice order (the form's "order"):
	// the server counts each question's first answer in an attempt.
	Attempt string `json:"attempt,omitempty"`
}

// answerResponse is the verdict on one answer, or what was wrong with it.
// Only now does the learner get the correct choices and the explanation:
// the quiz page does not carry them.
type answerResponse struct {
	Question       string `json:"question,omitempty"`
	Correct        bool   `json:"correct"`
	CorrectChoices []int  `json:"correctChoices,omitempty"`
	Explanation    string `json:"explanation,omitempty"`
	Error          string `json:"error,omitempty"`
}

// answer grades one question for the quiz page's script. Without a script
// the whole form posts to /quiz instead, which grades on the server too.
func (s *site) answer(w http.ResponseWriter, r *http.Request) {
	var req answerRequest
	if status, err := decodeJSON(w, r, answerLimit, &req, `{"question":"id","choices":[0],"attempt":"order"}`); err != nil {
		httpx.JSON(w, status, answerResponse{Error: "answer body " + err.Error()})
		return
	}
	q, err := quiz.Find(s.bank.Questions, req.Question)
	if err != nil {
		httpx.JSON(w, http.StatusNotFound, answerResponse{Error: err.Error()})
		return
	}
	order, err := parseOrder(req.Attempt)
	if err != nil {
		httpx.JSON(w, http.StatusBadRequest, answerResponse{Error: "attempt: " + err.Error()})
		return
	}
	g, err := quiz.GradeOne(q, req.Choices)
	if err != nil {
		httpx.JSON(w, http.StatusBadRequest, answerResponse{Error: err.Error()})
		return
	}
	s.graded(r, order.String(), quiz.Graded{Question: q, Answered: true, Correct: g.Correct})
	httpx.JSON(w, http.StatusOK, answerResponse{
		Question: q.ID, Correct: g.Correct, CorrectChoices: q.Correct(), Explanation: q.Explanation,
	})
}
