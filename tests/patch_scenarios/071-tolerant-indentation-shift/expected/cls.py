class K:
    def m(self):
        a = 1
        if a:
            return a
        return 0
