class K:
    def m(self):
        a = 1
        return a
