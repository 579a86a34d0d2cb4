curl -X POST http://127.0.0.1:8000/api/v1/schedules -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' \
  -d '{"agent": "assistant", "threadId": "daily-report", "cron": "0 9 * * mon-fri", "timezone": "Europe/Oslo", "input": {"messages": [{"role": "user", "content": "Summarize the open refunds."}]}, "webhook": {"url": "https://hooks.example.com/agui"}}'
