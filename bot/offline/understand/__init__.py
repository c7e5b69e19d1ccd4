"""Reading the question: text -> the parsed request (names, figures and their roles, the intent), and follow-ups as edits of the previous frame. The one place where what the user asks is decided."""
