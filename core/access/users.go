package access

// Bounds of a user (API.md, "Access").
const (
	UsernameBytesMax = 64
	PasswordBytesMin = 8
	PasswordBytesMax = 72 // bcrypt reads no further
	// RootUsername is the root user, made on a new cluster's first start: it cannot be
	// deleted or lose Admin, and only it grants Admin.
	RootUsername = "admin"
)

// ValidUsername reports whether name is 1 to UsernameBytesMax bytes of [A-Za-z0-9._-].
func ValidUsername(name string) bool {
	return len(name) > 0 && len(name) <= UsernameBytesMax && topicChars(name)
}

// CheckPassword checks a password's length: PasswordBytesMin to PasswordBytesMax bytes.
func CheckPassword(password string) error {
	if len(password) < PasswordBytesMin || len(password) > PasswordBytesMax {
		return invalid("a password is %d to %d bytes", PasswordBytesMin, PasswordBytesMax)
	}
	return nil
}
