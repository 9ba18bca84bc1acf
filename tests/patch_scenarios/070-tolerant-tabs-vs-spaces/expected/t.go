func f() {
	if x {
		log(x)
		return 2
	}
}
