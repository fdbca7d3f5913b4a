package wallet

// PreapprovalKind is what a receive-preapproval consents to receive.
type PreapprovalKind string

const (
	PreapprovalNFT   PreapprovalKind = "nft"
	PreapprovalUSDCx PreapprovalKind = "usdcx"
)

// ParsePreapprovalKind accepts "nft" or "usdcx".
func ParsePreapprovalKind(s string) (PreapprovalKind, error) {
	switch PreapprovalKind(s) {
	case PreapprovalNFT, PreapprovalUSDCx:
		return PreapprovalKind(s), nil
	}
	return "", Errorf(CodeInvalidRequest, "kind must be \"nft\" or \"usdcx\", not %q", Truncate(s, 40))
}
