"""What training showed each symbol, and what each symbol learned from it.

SpamLang's coverage cause: a symbol gets about batch x steps / V updates and returns every
V / batch steps. `exposure` counts, on device, the training sequences that showed each id;
`symbols` scores every symbol (or an even spread of them) and bins the scores by exposure;
`tracking` follows a few ids' embedding and head rows step by step.
"""
