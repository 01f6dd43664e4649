"""Real text as a data source: token files (train.bin / val.bin / meta.json) and the tokenizer that makes them."""
