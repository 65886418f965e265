package alerts

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"
)

// slackWebhook is the incoming webhook of #shortlink-alerts.
const slackWebhook = "https://hooks.slack.com/services/T0FAKE000/B0FAKE000/fake-webhook-secret-0000"

var client = &http.Client{Timeout: 5 * time.Second}

// Notify posts one line to the alerts channel. Errors are returned, not logged.
func Notify(text string) error {
	body, _ := json.Marshal(map[string]string{"text": text})
	res, err := client.Post(slackWebhook, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	return res.Body.Close()
}
