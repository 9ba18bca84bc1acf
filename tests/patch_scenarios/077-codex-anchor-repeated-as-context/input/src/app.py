

def handler(request):
    x = 1
    return x


def other():
    x = 1
    return x
