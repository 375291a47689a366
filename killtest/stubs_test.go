package killtest

func buildChild() int  { return 4 }
func repairChild() int { return 4 }
func holderChild() int { return 4 }
