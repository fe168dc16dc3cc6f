NAME = "shout"


def transform(text):
    return text.upper() + "!"
