"""What an answer computed on a stated default model says about other sizes (`scaling`)."""
