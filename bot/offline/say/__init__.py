"""How answers are said: the answer buffer and number formatting, phrases and templates in both languages, assumptions, wording of defaults and errors."""
