NAME = "reverse"


def transform(text):
    return text[::-1]
